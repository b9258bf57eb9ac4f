// Package lint holds checks on the shape of the code base itself, run as
// tests: the direction of imports between the packages of ucmfs.
package lint
