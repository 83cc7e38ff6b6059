// Package manager starts, stops and inspects a sandbox: the control plane, the node agent, the
// DGD realizer and the operator run as background processes whose pids, logs and
// configuration live in the state directory (.sandbox/ under the repository root).
package manager

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
)

// StateDirName is the state directory under the repository root.
const StateDirName = ".sandbox"

// Component names, in start order.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	NodeAgent         = "node-agent"
	Operator          = "dgdr-operator"
)

// Images the sandbox maps to local binaries.
const (
	PlannerImage  = "nvcr.io/nvidia/ai-dynamo/dynamo-planner:sandbox"
	OperatorImage = "localhost/dgdr/dgdr-operator:sandbox"
	// VerificationImage runs NVIDIA AIPerf from bin/aiperf (make aiperf) for the verification
	// Job of a deployed candidate.
	VerificationImage = "localhost/dgdr/aiperf:0.13.0"
	// HostileSearchImage runs `dgdr-sandbox hostile-search` (tools/sandbox/hostile): a search
	// that writes output breaking the output contract, for the attack suite.
	HostileSearchImage = "localhost/dgdr/hostile-search:attack"
	// HostileSearchCommand is the search command of HostileSearchImage.
	HostileSearchCommand = "dgdr-sandbox"
)

// State is what `up` records in state.json.
type State struct {
	Root      string             `json:"root"`
	Ports     controlplane.Ports `json:"ports"`
	Processes []ProcessState     `json:"processes"`
	StartedAt time.Time          `json:"startedAt"`
	// NoOperator: started with Options.NoOperator (no operator, CRDs or webhook configurations).
	NoOperator bool `json:"noOperator,omitempty"`
	// Recommender is what the Planner image runs (Options.Recommender; empty: aisim).
	Recommender Recommender `json:"recommender,omitempty"`
	// ImageLayouts are the images run from OCI layouts (Options.ImageLayouts).
	ImageLayouts []ImageLayout `json:"imageLayouts,omitempty"`
}

// Recommender is the program the sandbox's Planner image runs as `aisimulate recommend`.
type Recommender string

const (
	// RecommenderAISim is aisim, the project's Go-native stand-in (bin/aisim): searches take
	// seconds.
	RecommenderAISim Recommender = "aisim"
	// RecommenderAISimulate is the real AISimulate of the upstream venv (make upstream:
	// bin/upstream/bin/aisimulate), as the Planner image runs it in a cluster: a search takes
	// minutes.
	RecommenderAISimulate Recommender = "aisimulate"
)

// Recommenders lists the valid values of Options.Recommender.
var Recommenders = []Recommender{RecommenderAISim, RecommenderAISimulate}

// orDefault is r, or aisim when r is empty.
func (r Recommender) orDefault() Recommender {
	if r == "" {
		return RecommenderAISim
	}
	return r
}

// Binary is the local program that plays the Planner image: bin/aisim, or the venv's
// aisimulate, which must exist (make upstream).
func (r Recommender) Binary(bin string) (string, error) {
	switch r.orDefault() {
	case RecommenderAISim:
		return filepath.Join(bin, "aisim"), nil
	case RecommenderAISimulate:
		path := filepath.Join(bin, "upstream", "bin", "aisimulate")
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("--recommender aisimulate runs the real AISimulate of the upstream venv, and %s is missing: run make upstream", path)
		}
		return path, nil
	}
	return "", fmt.Errorf("unknown recommender %q (valid: aisim, aisimulate)", r)
}

func (s *State) mode() string {
	if s.NoOperator {
		return "without the operator (up --no-operator)"
	}
	return "with its own operator"
}

// ProcessState is one running component.
type ProcessState struct {
	controlplane.Process
	PID int `json:"pid"`
}

// FindRoot walks up from the working directory to the repository root (the go.mod of this
// module).
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/dgdr-operator/dgdr-operator\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the dgdr-operator repository (no go.mod of github.com/dgdr-operator/dgdr-operator above the working directory)")
		}
		dir = parent
	}
}

// StateDir is the state directory of the sandbox of root.
func StateDir(root string) string { return filepath.Join(root, StateDirName) }

// KubeconfigPath is the admin kubeconfig of the sandbox of root.
func KubeconfigPath(root string) string { return filepath.Join(StateDir(root), "kubeconfig") }

func statePath(root string) string { return filepath.Join(StateDir(root), "state.json") }

// LoadState reads state.json; os.ErrNotExist when no sandbox was started.
func LoadState(root string) (*State, error) {
	b, err := os.ReadFile(statePath(root))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(root), err)
	}
	return &s, nil
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	// Atomically: tests read it while a fault-injection goroutine restarts components.
	tmp := statePath(s.Root) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(s.Root))
}

func (s *State) find(name string) *ProcessState {
	for i := range s.Processes {
		if s.Processes[i].Name == name {
			return &s.Processes[i]
		}
	}
	return nil
}

// Alive tells whether pid is a running (non-zombie) process.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// state is the field after the parenthesized command name
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}
