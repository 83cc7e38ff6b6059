package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the operator's GOGC unless the environment sets one. The heap of the
// manager is mostly its informer caches, which are long-lived and change slowly; with Go's
// default of 100 the runtime lets the heap grow to twice that live set before collecting and
// keeps the pages, so the resident set is about twice the cache. 50 keeps it at 1.5 times for
// a little more collection work when objects churn (docs/develop/performance.md, P5).
const defaultGCPercent = 50

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}
