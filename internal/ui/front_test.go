package ui

import (
	"slices"
	"testing"
)

// TestParetoFront: the points no other point dominates, by increasing throughput per user;
// duplicates of a front point are on the front too, points tied on one axis and worse on the
// other are not.
func TestParetoFront(t *testing.T) {
	pts := []Point{
		{ID: "a", ThroughputPerUser: 10, ThroughputPerGPU: 100},
		{ID: "b", ThroughputPerUser: 20, ThroughputPerGPU: 80},
		{ID: "b2", ThroughputPerUser: 20, ThroughputPerGPU: 80}, // a duplicate of b
		{ID: "c", ThroughputPerUser: 20, ThroughputPerGPU: 70},  // same x as b, lower
		{ID: "d", ThroughputPerUser: 15, ThroughputPerGPU: 80},  // same y as b, lower x
		{ID: "e", ThroughputPerUser: 30, ThroughputPerGPU: 10},
		{ID: "f", ThroughputPerUser: 5, ThroughputPerGPU: 50},
	}
	if got, want := paretoFront(pts), []string{"a", "b", "b2", "e"}; !slices.Equal(got, want) {
		t.Errorf("front %v, want %v", got, want)
	}
	if got := paretoFront(nil); got == nil || len(got) != 0 {
		t.Errorf("front of nothing: %#v", got)
	}
}
