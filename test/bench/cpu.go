package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
)

// cpuSample is the CPU time (user + system, seconds) used so far by this process and by its
// child processes (envtest's kube-apiserver and etcd), by command name.
type cpuSample map[string]float64

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on every Linux build Go
// supports).
const clockTicks = 100

// sampleCPU reads /proc: this process under "bench" (it runs the operator's controllers and
// webhooks and the clients), each direct child under its command name.
func sampleCPU() cpuSample {
	out := cpuSample{}
	self := os.Getpid()
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15); comm may hold spaces, so split after ')'.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
		comm := s[open+1 : end]
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		switch {
		case pid == self:
			out["bench"] += (utime + stime) / clockTicks
		case ppid == self:
			out[comm] += (utime + stime) / clockTicks
		}
	}
	return out
}

// add adds the CPU seconds used between before and now.
func (s cpuSample) add(now, before cpuSample) {
	for name, v := range now {
		s[name] += v - before[name]
	}
}

// format prints the CPU seconds per burst (the sum over bursts bursts), per process.
func (s cpuSample) format(bursts int) string {
	var parts []string
	total := 0.0
	for _, name := range []string{"bench", "kube-apiserver", "etcd"} {
		d := s[name] / float64(bursts)
		total += d
		parts = append(parts, fmt.Sprintf("%s=%.1f", strings.TrimPrefix(name, "kube-"), d))
	}
	return fmt.Sprintf("cpu_s=%.1f(%s)", total, strings.Join(parts, ","))
}

// p3CPUProfile, when set (-p3-cpuprofile), receives a pprof CPU profile of this process while
// the operator handles P3's burst.
var p3CPUProfile string

// startProfile starts a CPU profile into path (nothing when path is empty) and returns its stop.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
