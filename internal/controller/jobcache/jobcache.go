// Package jobcache says which of the operator's Jobs and their pods the manager's cache holds,
// and how a controller reads a Job the cache does not hold.
//
// The cache holds no Job that has succeeded (Selector) and no pod that succeeded
// (PodSelector): once a search, baseline or verification Job succeeded, what it produced is in
// the status of its Run or request, and the operator reads the Job and its pods again at most
// once, from the API server, to record how it ended. At 5,000 requests most Jobs have succeeded,
// and they were the largest part of the cache (docs/develop/performance.md, P5); their pods,
// with their containers' termination messages, would be as large, until the Jobs' TTL deletes
// them. When a Job succeeds, its watch event is a deletion; the Run or request that owns it
// reads it from the API server from then on, until it is Settled.
package jobcache

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// succeededField is the Job field the API server selects on (status.succeeded, as a string).
const succeededField = "status.successful"

// Selector selects the Jobs the cache holds: those without a succeeded pod.
func Selector() fields.Selector {
	return fields.OneTermEqualSelector(succeededField, "0")
}

// PodSelector selects the pods the cache holds: those that have not succeeded. A failed pod
// stays, and so does a running one whose init container ended (a re-search's window report).
func PodSelector() fields.Selector {
	return fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded))
}

// Finished returns the Job's terminal condition (Complete or Failed), nil while it runs.
func Finished(job *batchv1.Job) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// Settled tells whether a Job read from the API server, because the cache did not hold it, is
// final as far as the cache is concerned: it succeeded, so the cache will not hold it again, and
// it has finished. Otherwise the caller looks again shortly (Poll): a Job that has not succeeded
// is one the cache has not caught up with (created a moment ago), and no event reports the
// changes of a succeeded Job that has yet to finish (its Complete condition follows its pods'
// termination).
func Settled(job *batchv1.Job) bool {
	return job.Status.Succeeded > 0 && Finished(job) != nil
}

// Poll is how soon a controller reads again a Job that is not Settled.
const Poll = time.Second
