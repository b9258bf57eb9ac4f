// Package lint holds checks on the shape of the code base itself, run as
// tests: the direction of imports between the packages of ucmfs, that
// docs/design.md's package map says what the code imports, and where
// errno constants may appear.
package lint
