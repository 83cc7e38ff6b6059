package rights

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// CheckTTL is how long a Checker keeps a verdict: a revoked right takes effect at most that long
// after the revocation. Within it, a request's reconciles cost no API call for its rights.
const CheckTTL = 30 * time.Second

// pruneAt is the number of kept verdicts from which storing one drops the expired ones.
const pruneAt = 256

// Checker asks, before the operator writes anything on a request's behalf, whether the user
// whose rights admission last reviewed for it (AnnotationReviewedUser) still holds them: the
// SubjectAccessReviews of Review, for the request's whole spec. A verdict is kept for CheckTTL
// per request, generation and reviewed user, so that the reconciles of a busy request (every
// Run progress update reaches them) do not each read the request and ask the API server. It is
// safe for concurrent reconciles.
type Checker struct {
	// SAR creates the SubjectAccessReviews (the manager's client).
	SAR Creator
	// Reader reads the whole request (the manager's API reader: the cache keeps little of an
	// accepted request's spec).
	Reader client.Reader
	// Now is the clock of the verdicts (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	verdicts map[types.UID]verdict
}

type verdict struct {
	generation int64
	reviewer   string
	denial     string
	at         time.Time
}

// Denial returns "" when the reviewed user of dgdr (as the cache has it: identity, generation,
// annotations) holds every right the operator exercises for its spec, and otherwise a message
// naming each missing right, or saying that the request records no reviewed user. On a cache miss
// it reads the request whole through Reader.
func (c *Checker) Denial(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest) (string, error) {
	if d, ok := c.cached(dgdr); ok {
		return d, nil
	}
	whole := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := c.Reader.Get(ctx, client.ObjectKeyFromObject(dgdr), whole); err != nil {
		return "", fmt.Errorf("reading request %s for its reviewed user's rights: %w", client.ObjectKeyFromObject(dgdr), err)
	}
	if whole.UID != dgdr.UID {
		return "", fmt.Errorf("request %s was replaced", client.ObjectKeyFromObject(dgdr))
	}
	return c.DenialOfWhole(ctx, whole)
}

// DenialOfWhole is Denial for a request read whole (its spec complete).
func (c *Checker) DenialOfWhole(ctx context.Context, whole *v1beta2.DynamoGraphDeploymentRequest) (string, error) {
	if d, ok := c.cached(whole); ok {
		return d, nil
	}
	denial, err := c.review(ctx, whole)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verdicts == nil {
		c.verdicts = map[types.UID]verdict{}
	}
	if len(c.verdicts) >= pruneAt {
		// Requests deleted since leave their verdicts behind: drop every expired one.
		for uid, v := range c.verdicts {
			if c.now().Sub(v.at) >= CheckTTL {
				delete(c.verdicts, uid)
			}
		}
	}
	c.verdicts[whole.UID] = verdict{generation: whole.Generation, reviewer: whole.Annotations[v1beta2.AnnotationReviewedUser], denial: denial, at: c.now()}
	return denial, nil
}

// review asks the API server.
func (c *Checker) review(ctx context.Context, whole *v1beta2.DynamoGraphDeploymentRequest) (string, error) {
	user, ok, err := Reviewed(whole)
	if !ok {
		why := "records no reviewed user (annotation " + v1beta2.AnnotationReviewedUser + ": it was admitted before the operator recorded them)"
		if err != nil {
			why = "has a reviewed user that cannot be read (" + err.Error() + ")"
		}
		return "the request " + why + "; the operator acts only for a user whose rights it can ask for: edit the spec to have your rights reviewed", nil
	}
	res, err := Review(ctx, c.SAR, user, whole.Namespace, &whole.Spec)
	if err != nil || !res.Denied() {
		return "", err
	}
	return res.Message(user.Username, whole.Namespace), nil
}

// cached is the verdict kept for dgdr's generation and reviewed user, if still fresh.
func (c *Checker) cached(dgdr *v1beta2.DynamoGraphDeploymentRequest) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.verdicts[dgdr.UID]
	if !ok || v.generation != dgdr.Generation || v.reviewer != dgdr.Annotations[v1beta2.AnnotationReviewedUser] || c.now().Sub(v.at) >= CheckTTL {
		return "", false
	}
	return v.denial, true
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
