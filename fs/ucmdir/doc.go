// Package ucmdir is <mnt>/.ucm/, the control directory, as go-fuse
// nodes: a node per row of control's table (control.Files), each open
// descriptor of a request file one control.Session (package control: the
// line protocol, bytes in and out), .ucm/events a control.EventStream,
// .ucm/stats the store's snapshot as JSON, .ucm/gpu.sock a link to the
// GPU socket. It only moves the kernel's reads and writes to the session
// and passes on the caller; docs/control.md is the user's reference.
//
// Decided: a package of its own beside the adapter (package fs), which
// makes its root node (New) and is its Host: the errno of an error, the
// log line of a refusal, the attributes every file of the mount has, and
// what every node answers alike (Common, DirNode: the adapter's own
// embedded answers, embedded here as interfaces so that go-fuse finds
// their methods on these nodes too).
package ucmdir
