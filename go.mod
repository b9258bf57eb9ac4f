module github.com/ucmfs/ucmfs

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgraph-io/ristretto/v2 v2.4.2 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/hanwen/go-fuse/v2 v2.12.1 // indirect
	github.com/pkg/xattr v0.4.12 // indirect
	github.com/urfave/cli/v3 v3.14.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
