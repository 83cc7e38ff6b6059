package nodeagent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Usage is what the agent records of a container process when it exits, in
// <pod dir>/usage/<container>.json: tests read it to assert that a container stayed within its
// memory limit (test/attack).
type Usage struct {
	// MaxRSSBytes is the process's peak resident set size (getrusage's ru_maxrss, from wait4).
	MaxRSSBytes int64 `json:"maxRSSBytes"`
	// MemoryLimitBytes is the container's memory limit (0: none).
	MemoryLimitBytes int64 `json:"memoryLimitBytes,omitempty"`
	// OOMKilled says the agent killed the process for exceeding its memory limit.
	OOMKilled bool `json:"oomKilled,omitempty"`
	// ExitCode of the process.
	ExitCode int `json:"exitCode"`
}

// UsagePath is where the usage of a pod's container is recorded.
func UsagePath(podDir, container string) string {
	return filepath.Join(podDir, "usage", container+".json")
}

// ReadUsage reads the recorded usage of a container of the pod whose directory is podDir.
func ReadUsage(podDir, container string) (*Usage, error) {
	b, err := os.ReadFile(UsagePath(podDir, container))
	if err != nil {
		return nil, err
	}
	var u Usage
	return &u, json.Unmarshal(b, &u)
}

// PodDirs returns the state directories of the pods of namespace ns (the agent names them
// <namespace>_<pod>_<uid prefix>).
func PodDirs(stateDir, ns string) ([]string, error) {
	return filepath.Glob(filepath.Join(stateDir, ns+"_*"))
}

func writeUsage(podDir, container string, u Usage) error {
	if err := os.MkdirAll(filepath.Join(podDir, "usage"), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return os.WriteFile(UsagePath(podDir, container), b, 0o644)
}

// maxRSS is the peak RSS of an exited process, in bytes (ru_maxrss is in KiB on Linux).
func maxRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}

// memoryPollInterval is how often the agent checks a container's resident memory.
const memoryPollInterval = 50 * time.Millisecond

// watchMemory plays the cgroup memory limit the kubelet sets: every memoryPollInterval it reads
// the process's resident set size and kills its process group when it is above limit, which the
// agent then reports as OOMKilled (exit code 137). It stops when done is closed.
func watchMemory(pid int, limit int64, done <-chan struct{}, killed *atomic.Bool) {
	if limit <= 0 {
		return
	}
	t := time.NewTicker(memoryPollInterval)
	defer t.Stop()
	page := int64(os.Getpagesize())
	statm := filepath.Join("/proc", strconv.Itoa(pid), "statm")
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		b, err := os.ReadFile(statm)
		if err != nil {
			continue
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		pages, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil || pages*page <= limit {
			continue
		}
		killed.Store(true)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return
	}
}
