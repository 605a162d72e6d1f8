//go:build !race

package httpapi_test

// raceAllocs: none without the race detector (race_on_test.go).
const raceAllocs = 0
