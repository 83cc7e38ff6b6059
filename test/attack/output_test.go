//go:build attack

package attack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/hostile"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// TestHugeResultIsRejected: the search image writes a 1 GiB recommendation.json and exits 0.
// The Run must end OutputRejected, naming the file and the cap, with no Candidate published,
// while the reporter stays within its memory limit (its peak RSS, from the rusage the node agent
// records when the process exits, and no OOM kill by the agent's memory-limit enforcement).
//
// It proves the reporter's caps (internal/searchoutput: ReadCapped, checked before
// anything is published) and their classification (jobcontract.ReporterExitOutputRejected, the
// publication container's exit → Classify → OutputRejected). Reverted, the reporter reads the
// whole gigabyte: the agent kills it over its 256Mi limit at each of its restarts, and the Run
// never ends OutputRejected.
func TestHugeResultIsRejected(t *testing.T) {
	hostileOutput(t, hostile.AttackHugeResult, "recommendation.json is 1073741824 bytes, over the reporter's cap of 32 MiB")
}

// TestDevZeroResultIsRejected: the search image makes recommendation.json a symbolic link to
// /dev/zero and exits 0. The Run must end OutputRejected naming the link, with no Candidate
// published and the reporter within its memory limit.
//
// It proves that the reporter refuses symbolic links and non-regular files (O_NOFOLLOW and the
// fstat check of internal/searchoutput: OpenRegular). Reverted, the reporter reads
// /dev/zero without end until the agent kills it over its memory limit, at each restart.
func TestDevZeroResultIsRejected(t *testing.T) {
	hostileOutput(t, hostile.AttackDevZero, "recommendation.json is a symbolic link (refused)")
}

// TestImageThatCannotStart: the operator's Planner image is not in the node agent's image map,
// so the search container waits in ErrImagePull forever (as with a typo in planner.image on a
// real cluster). The Run must end SearchPodFailedToStart within 5 minutes (the default
// job.startFailureGraceSeconds is 120 s; the Job's deadline in the sandbox is 600 s), with a
// message naming the container and the cause, and the Job must be deleted.
//
// It proves the Run controller's pod watch and start-failure check (internal/controller/run:
// startfailure.go checkStart, completion.go StartFailureOf). Reverted, the Run stays Pending until
// the Job's 600 s deadline and the test times out at 5 minutes.
func TestImageThatCannotStart(t *testing.T) {
	const image = "localhost/dgdr/no-such-planner:attack"
	withOperatorConfig(t, func(cfg *v1alpha1.OperatorConfiguration) { cfg.Planner.Image = image })
	ns := newNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "unstartable"))
	runName := awaitRunOf(t, ns, "unstartable")
	run := env.WaitRunDone(t, ns, runName, 5*time.Minute)
	reason, msg, _ := sandboxtest.Completed(run)
	lasted := run.Status.CompletionTime.Sub(run.CreationTimestamp.Time)
	t.Logf("Run %s ended %s after %s: %s", runName, reason, lasted.Round(time.Second), msg)
	if reason != v1beta2.ReasonSearchPodFailedToStart {
		t.Fatalf("Run ended %s, want %s: %s", reason, v1beta2.ReasonSearchPodFailedToStart, msg)
	}
	for _, want := range []string{`container "search"`, "ErrImagePull", image, "planner.image"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not name %q", msg, want)
		}
	}
	if lasted > 5*time.Minute {
		t.Errorf("the Run ended %s after its creation, want at most 5 minutes", lasted)
	}
	sandboxtest.WaitFor(t, time.Minute, poll, "the search Job to be deleted", func(ctx context.Context) (bool, string, error) {
		var job batchv1.Job
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(runName)}, &job)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("Job still there (deleting: %v)", err == nil && job.DeletionTimestamp != nil), client.IgnoreNotFound(err)
	})
}

// hostileOutput runs one search with the hostile search image and the given attack and checks
// that the Run ends OutputRejected with want in its message, nothing published, the reporter
// within its memory limit and the publication container ending with the reporter's refusal.
func hostileOutput(t *testing.T, attack, want string) {
	var limit int64
	withOperatorConfig(t, func(cfg *v1alpha1.OperatorConfiguration) {
		cfg.Planner.Image = manager.HostileSearchImage
		cfg.Planner.Command = []string{manager.HostileSearchCommand, "hostile-search"}
		cfg.Planner.Args = []string{"--attack", attack}
		limit = cfg.Reporter.Resources.Limits.Memory().Value()
	})
	if limit <= 0 {
		t.Fatal("the sandbox's reporter has no memory limit")
	}
	ns := newNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "hostile"))
	runName := awaitRunOf(t, ns, "hostile")
	run := env.WaitRunDone(t, ns, runName, searchTimeout)
	reason, msg, _ := sandboxtest.Completed(run)
	t.Logf("Run %s ended %s: %s", runName, reason, msg)
	if reason != v1beta2.ReasonOutputRejected || !strings.Contains(msg, want) {
		t.Errorf("Run ended %s (%s), want %s with %q", reason, msg, v1beta2.ReasonOutputRejected, want)
	}
	var cands v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(context.Background(), &cands, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(cands.Items) != 0 {
		t.Errorf("%d Candidates published from hostile output", len(cands.Items))
	}
	if len(run.Status.CandidateRefs) != 0 || run.Status.Recommendation != nil {
		t.Errorf("status published from hostile output: refs %v, recommendation %+v", run.Status.CandidateRefs, run.Status.Recommendation)
	}
	u := containerUsage(t, ns, jobcontract.ReporterContainer)
	t.Logf("reporter: peak RSS %d MiB (limit %d MiB), exit code %d, OOM-killed %v", u.MaxRSSBytes>>20, limit>>20, u.ExitCode, u.OOMKilled)
	if u.OOMKilled || u.MaxRSSBytes <= 0 || u.MaxRSSBytes >= limit {
		t.Errorf("the reporter did not stay within its memory limit: peak RSS %d bytes, limit %d, OOM-killed %v", u.MaxRSSBytes, limit, u.OOMKilled)
	}
	// The reporter is a sidecar: its refusal is the outcome the publication container ends with.
	if p := containerUsage(t, ns, jobcontract.PublicationContainer); p.ExitCode != jobcontract.ReporterExitOutputRejected {
		t.Errorf("publication container exit code %d, want the reporter's %d", p.ExitCode, jobcontract.ReporterExitOutputRejected)
	}
}

// withOperatorConfig replaces the sandbox's operator, for the rest of the test, by one whose
// configuration is the sandbox's with edit applied (same ports, so the webhooks keep working),
// its chart applied with the new values (the fence names the new images), as an admin upgrades
// the release. The sandbox's normal operator and chart are restored when the test ends.
func withOperatorConfig(t *testing.T, edit func(*v1alpha1.OperatorConfiguration)) {
	t.Helper()
	original, err := manager.Component(root, manager.Operator)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := manager.SandboxOperatorPorts(root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(manager.StateDir(root), "operator-attack.yaml")
	if err := manager.ReconfigureOperator(context.Background(), root, path, ports, edit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restore := filepath.Join(manager.StateDir(root), "operator-restored.yaml")
		if err := manager.ReconfigureOperator(context.Background(), root, restore, ports, nil); err != nil {
			t.Errorf("restoring the sandbox's operator chart: %v", err)
		}
		if _, err := manager.StartComponent(root, original); err != nil {
			t.Errorf("restoring the sandbox's operator: %v", err)
			return
		}
		if err := sandboxtest.Poll(time.Minute, poll, env.OperatorAdmits); err != nil {
			t.Errorf("the restored operator: %v", err)
		}
	})
	if _, err := manager.StartComponent(root, manager.OperatorReplica(root, manager.Operator, path)); err != nil {
		t.Fatal(err)
	}
	sandboxtest.WaitFor(t, time.Minute, poll, "the reconfigured operator's webhooks", env.OperatorAdmits)
}

// awaitRunOf waits until the request has a Run and returns its name.
func awaitRunOf(t *testing.T, ns, request string) string {
	t.Helper()
	name := ""
	sandboxtest.WaitFor(t, time.Minute, poll, "a Run of "+ns+"/"+request, func(ctx context.Context) (bool, string, error) {
		var l v1beta2.DynamoGraphDeploymentRunList
		if err := k8s.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRequestName: request}); err != nil {
			return false, "", err
		}
		if len(l.Items) > 0 {
			name = l.Items[0].Name
		}
		return name != "", fmt.Sprintf("%d Runs", len(l.Items)), nil
	})
	return name
}

// containerUsage is what the node agent recorded of the named container's process of the
// namespace's (only) search pod.
func containerUsage(t *testing.T, ns, container string) *nodeagent.Usage {
	t.Helper()
	dirs, err := nodeagent.PodDirs(filepath.Join(manager.StateDir(root), "pods"), ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		u, err := nodeagent.ReadUsage(d, container)
		if err == nil {
			return u
		}
		if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	t.Fatalf("no recorded usage of container %s in %v", container, dirs)
	return nil
}
