// Package metrics exposes the operator's Prometheus metrics on controller-runtime's registry
// (served by the manager's metrics endpoint).
package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

const namespace = "dgdr_operator"

var (
	// RunsCompleted counts Runs that became terminal, by reason of their Completed condition.
	RunsCompleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "runs_completed_total",
		Help:      "Runs that reached a terminal state, by reason of the Completed condition.",
	}, []string{"reason"})

	// RunDuration observes how long terminal Runs took, from creation to completion.
	RunDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "run_duration_seconds",
		Help:      "Time from Run creation to its terminal state, by reason.",
		// 10 s .. ~11 h
		Buckets: prometheus.ExponentialBuckets(10, 2, 13),
	}, []string{"reason"})

	runsDesc = prometheus.NewDesc(namespace+"_runs",
		"Current DynamoGraphDeploymentRuns by namespace, phase and reason of the Completed condition.",
		[]string{"namespace", "phase", "reason"}, nil)
)

// runCollector counts Runs from the manager's cache at scrape time, so the gauge is exact even
// after restarts and deletions.
type runCollector struct {
	reader atomic.Pointer[client.Reader]
}

var (
	collector    = &runCollector{}
	registerOnce sync.Once
)

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) { ch <- runsDesc }

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.reader.Load()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var runs v1beta2.DynamoGraphDeploymentRunList
	if err := (*r).List(ctx, &runs); err != nil {
		return
	}
	type key struct{ ns, phase, reason string }
	counts := map[key]int{}
	for i := range runs.Items {
		run := &runs.Items[i]
		k := key{ns: run.Namespace, phase: string(run.Status.Phase)}
		for _, c := range run.Status.Conditions {
			if c.Type == v1beta2.ConditionCompleted {
				k.reason = c.Reason
			}
		}
		counts[k]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(n), k.ns, k.phase, k.reason)
	}
}

// Register registers the metrics on controller-runtime's registry (once per process) and makes
// the runs gauge read from reader (normally the manager's cache).
func Register(reader client.Reader) {
	registerOnce.Do(func() {
		crmetrics.Registry.MustRegister(RunsCompleted, RunDuration, collector)
	})
	collector.reader.Store(&reader)
}

// ObserveCompletion records a Run that just became terminal.
func ObserveCompletion(reason string, duration time.Duration) {
	RunsCompleted.WithLabelValues(reason).Inc()
	if duration > 0 {
		RunDuration.WithLabelValues(reason).Observe(duration.Seconds())
	}
}
