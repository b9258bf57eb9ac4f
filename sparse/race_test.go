//go:build race

package sparse

// raceEnabled is whether the tests run with the race detector.
const raceEnabled = true
