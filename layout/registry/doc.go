// Package registry is the one table of the layouts of a model directory
// (layout/ucmb, layout/posix, layout/files): a layout by its name (the
// value of user.ucm.layout), the layout of a key (by its kind), the
// default one. It and the layouts' own packages are the only places that
// name a layout; adding one is a line of the table (layout/doc.go lists
// the rest).
package registry
