package fs

import (
	"io"
	"os"
	"testing"
)

// benchModes runs fn with passthrough and with daemon-served I/O.
func benchModes(b *testing.B, fn func(b *testing.B, m *testMount)) {
	for _, c := range []struct {
		name string
		pt   bool
	}{{"passthrough", true}, {"daemon", false}} {
		b.Run(c.name, func(b *testing.B) {
			m := newMount(b, Options{Passthrough: c.pt})
			if c.pt && !m.srv.PassthroughActive() {
				b.Skip("passthrough unavailable here")
			}
			fn(b, m)
		})
	}
}

// BenchmarkRead2MiB opens, reads and closes one 2 MiB block.
func BenchmarkRead2MiB(b *testing.B) {
	benchModes(b, func(b *testing.B, m *testMount) {
		k, d := testBlock(testModel, 1, 2<<20-64)
		put(b, m.st, k, d)
		buf := make([]byte, 1<<20)
		b.SetBytes(int64(len(d)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f, err := os.Open(m.keyPath(k))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, onlyReader{f}, buf); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// BenchmarkWrite2MiB writes, publishes and unlinks one 2 MiB block.
func BenchmarkWrite2MiB(b *testing.B) {
	benchModes(b, func(b *testing.B, m *testMount) {
		k, d := testBlock(testModel, 1, 2<<20-64)
		os.Mkdir(m.path(testModel), 0o755)
		b.SetBytes(int64(len(d)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := writeFile(m.keyPath(k), d); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := os.Remove(m.keyPath(k)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

// BenchmarkStatCached stats a published block the kernel has cached.
func BenchmarkStatCached(b *testing.B) {
	benchModes(b, func(b *testing.B, m *testMount) {
		k, d := testBlock(testModel, 1, 64)
		put(b, m.st, k, d)
		p := m.keyPath(k)
		for i := 0; i < b.N; i++ {
			if _, err := os.Stat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// onlyReader hides WriteTo so the copy uses the 1 MiB buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
