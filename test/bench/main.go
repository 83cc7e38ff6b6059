// Command bench measures the figures of docs/develop/performance.md and prints one comparable line per
// figure, each a ratio against a baseline measured in the same run (or an absolute value with
// its goal). A line reads:
//
//	P1 admission_own_work_vs_schema_check ratio=1.52 own_us=52.0 schema_us=34.3 ... goal<=0.5 miss
//
// Run it with `make bench` (it needs bin/etcd, bin/kube-apiserver and bin/dgdr-operator; P11 also
// the sandbox's binaries, bin/upstream and bin/aiperf).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// figure is one measured result.
type figure struct {
	id, name string
	// ratio or value, whichever the figure reports.
	ratio, value float64
	isRatio      bool
	extra        string // e.g. "p99_ms=1.2"
	goal         float64
	// goalAlso is a second condition of the goal, printed after it ("budget64_wall_s<=2").
	goalAlso string
	ok       bool
	note     string
	// measurement: the figure is reported with no goal (P7b, P9, P11).
	measurement bool
}

func (f figure) line() string {
	verdict := "miss"
	if f.ok {
		verdict = "ok"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s ", f.id, f.name)
	if f.isRatio {
		fmt.Fprintf(&b, "ratio=%.2f", f.ratio)
	} else {
		fmt.Fprintf(&b, "value=%.2f", f.value)
	}
	if f.extra != "" {
		fmt.Fprintf(&b, " %s", f.extra)
	}
	if f.measurement {
		b.WriteString(" measurement")
		return b.String()
	}
	fmt.Fprintf(&b, " goal<=%g", f.goal)
	if f.goalAlso != "" {
		fmt.Fprintf(&b, ",%s", f.goalAlso)
	}
	fmt.Fprintf(&b, " %s", verdict)
	return b.String()
}

func main() {
	only := flag.String("only", "P1,P2,P3,P4,P5,P6,P7,P7b,P8,P9,P10,P11", "comma-separated figures to measure (P7b and P9 run the real AISimulate of make upstream; P11 runs the sandbox with the Dynamo mocker and AIPerf)")
	p9Trials := flag.Int("p9-trials", 0, "optimizer.max_trials of P9's searches (0: the demo requests' own)")
	burst := flag.Int("burst", 500, "requests in the P3/P4 burst")
	objects := flag.Int("objects", 5000, "objects of each kind for P5")
	rate := flag.Int("rate", 500, "admission requests per second for P2")
	duration := flag.Duration("duration", 6*time.Second, "duration of the P2 load")
	aisimRuns := flag.Int("aisim-runs", 5, "timed aisim recommend runs for P6 (the median is reported)")
	budgetRounds := flag.Int("budget-rounds", 3, "timed searches of each request at each budget for P10 (the medians are compared)")
	p11Requests := flag.Int("p11-requests", 30, "requests of each P11 verification (at least four per slot of the request's static concurrency)")
	p11MaxDuration := flag.Int("p11-max-duration", 120, "maxDurationSeconds of each P11 verification")
	flag.StringVar(&p3CPUProfile, "p3-cpuprofile", "", "write a pprof CPU profile of this process (the operator's controllers and webhooks, the clients) during the first of P3's operator bursts")
	flag.StringVar(&p5HeapProfile, "p5-heapprofile", "", "after P5's figure, run the operator's manager in this process against P5's cluster and write a pprof heap profile of it")
	flag.Parse()
	if p5HeapProfile != "" {
		// One sample per 4 KB allocated instead of 512 KB: the profile's items are a few MB each.
		runtime.MemProfileRate = 4096
	}
	// The components under test log through controller-runtime; keep the output to the figures.
	ctrl.SetLogger(logr.Discard())
	want := map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		want[strings.TrimSpace(p)] = true
	}
	fmt.Printf("machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	var figures []figure
	fail := func(id string, err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", id, err)
		os.Exit(1)
	}
	if want["P1"] {
		f, err := benchLowering()
		if err != nil {
			fail("P1", err)
		}
		figures = append(figures, f)
	}
	if want["P2"] {
		f, err := benchAdmission(*rate, *duration)
		if err != nil {
			fail("P2", err)
		}
		figures = append(figures, f)
	}
	if want["P3"] || want["P4"] {
		fs, err := benchBurst(*burst)
		if err != nil {
			fail("P3/P4", err)
		}
		for _, f := range fs {
			if want[f.id] {
				figures = append(figures, f)
			}
		}
	}
	if want["P5"] {
		f, err := benchMemory(*objects)
		if err != nil {
			fail("P5", err)
		}
		figures = append(figures, f)
	}
	if want["P6"] {
		f, err := benchAISim(*aisimRuns)
		if err != nil {
			fail("P6", err)
		}
		figures = append(figures, f)
	}
	if want["P7"] {
		f, err := benchSilicon()
		if err != nil {
			fail("P7", err)
		}
		figures = append(figures, f)
	}
	if want["P7b"] {
		f, err := benchSiliconUpstream(".")
		if err != nil {
			fail("P7b", err)
		}
		figures = append(figures, f)
	}
	if want["P8"] {
		f, err := benchTraceReplay()
		if err != nil {
			fail("P8", err)
		}
		figures = append(figures, f)
	}
	if want["P9"] {
		f, err := benchSideBySide(".", *p9Trials)
		if err != nil {
			fail("P9", err)
		}
		figures = append(figures, f)
	}
	if want["P10"] {
		f, err := benchBudgetScaling(".", *budgetRounds)
		if err != nil {
			fail("P10", err)
		}
		figures = append(figures, f)
	}
	if want["P11"] {
		f, err := benchVerification(".", int32(*p11Requests), int32(*p11MaxDuration))
		if err != nil {
			fail("P11", err)
		}
		figures = append(figures, f)
	}
	fmt.Println()
	for _, f := range figures {
		if f.note != "" {
			fmt.Printf("# %s: %s\n", f.id, f.note)
		}
	}
	for _, f := range figures {
		fmt.Println(f.line())
	}
}
