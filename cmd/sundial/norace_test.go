//go:build !race

package main

// raceDetector reports whether the tests run under the race detector,
// which makes timings mean nothing.
const raceDetector = false
