// Package control is the line protocol of the control files under
// <mnt>/.ucm/ (lookup, prefetch, flush, gpu, topk): bytes in, bytes out.
//
// Each open descriptor of a control file is a Session (session.go): the
// front end hands it the bytes written (Session.Write) and asks it for the
// answer bytes (Session.Read). Every request line gets one answer line,
// "ok ..." or "err <ERRNO> <message>". Each file is one handler in its own
// source file that registers itself (File, env.go): lookup.go,
// prefetch.go, flush.go, topk.go with topk_parse.go, and gpu.go, whose
// sessions are the GPU transfer engine's (package transfer). Requests are
// tokenized without allocating per id by package control/line, the
// grammar this package and transfer share.
//
// A session is its opener's: the front end captures the credentials of
// the process that opens a file (Access.Capture, line.Creds), the session
// keeps them, every request is checked as them, and a write or read by a
// process with another fsuid or fsgid is refused (line.ErrNotOpener).
//
// Handlers work on the store (store.Store, through Env) and return Go
// errors: the sentinels of line and errors.go, or those of store, format,
// gpu and transfer. The errno an answer line names comes from the front end
// (Env.ErrName), so this package imports neither go-fuse nor errno
// constants, and its tests run without a kernel. docs/control.md is the
// user's reference of the grammar.
package control
