package control

// The files of .ucm/, in one table the front end reads: each file's
// name, kind, inode number and permission bits. A new control file is one
// more row (and its handler, in a file of its own).

// Kind is what a control file is to the front end.
type Kind uint8

const (
	// Requests: each open descriptor is a Session of request lines
	// (File.Open); its mode is the control files' (Access.Perm).
	Requests Kind = iota
	// Snapshot: a read-only JSON snapshot of the counters, taken at open.
	Snapshot
	// SocketLink: a symbolic link to the GPU socket (Env.GPUSocket).
	SocketLink
	// Stream: each open descriptor is an EventStream (Env.OpenEvents),
	// read as a stream of JSON lines; its mode is the control files'.
	Stream
)

// Inode numbers of the front end: the root, .ucm/, and the control files
// (a row's Ino), all at most LastIno; numbers above it are the front
// end's own.
const (
	RootIno = 1
	DirIno  = 2
	LastIno = 255
)

// File is one file under .ucm/.
type File struct {
	// Name is the file's name in .ucm/.
	Name string
	// Kind says how the front end serves it.
	Kind Kind
	// Ino is its inode number, the same on every mount.
	Ino uint64
	// Perm is its permission bits; 0 for a Requests file, whose mode is
	// the control files' (Access.Perm).
	Perm uint32
	// Paths: its requests name paths, resolved in the opener's view
	// (register sim): a session holds the opener's root and working
	// directory (Access.Capture).
	Paths bool
	// open starts the handler of a new session (Requests files).
	open func(e *Env) handler
	// enabled reports whether the mount shows the file (nil: always).
	enabled func(e *Env) bool
}

// table is every file of .ucm/, in the order of a listing.
var table = []File{
	{Name: "stats", Kind: Snapshot, Ino: 3, Perm: 0o444},
	{Name: "lookup", Ino: 4, open: func(e *Env) handler { return &lookupSession{s: e} }},
	{Name: "prefetch", Ino: 5, open: func(e *Env) handler { return &prefetchSession{s: e} }},
	{Name: "flush", Ino: 6, open: func(e *Env) handler { return &flushSession{s: e} }},
	{Name: "gpu", Ino: 7, Paths: true, open: openGPU, enabled: func(e *Env) bool { return e.GPU != nil }},
	{Name: "topk", Ino: 8, open: func(e *Env) handler { return &topkSession{s: e} }},
	{Name: "events", Kind: Stream, Ino: 10},
	{Name: "gpu.sock", Kind: SocketLink, Ino: 9, Perm: 0o777, enabled: func(e *Env) bool { return e.GPUSocket() != nil }},
}

// Files returns the files of .ucm/ the mount of e shows, in table order.
func Files(e *Env) []File {
	var out []File
	for _, f := range table {
		if f.enabled == nil || f.enabled(e) {
			out = append(out, f)
		}
	}
	return out
}
