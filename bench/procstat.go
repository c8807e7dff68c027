package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NodeStats is what one node process used.
type NodeStats struct {
	Node         string  `json:"node"`
	PID          int     `json:"pid"`
	CPUSeconds   float64 `json:"cpu_seconds"`    // user + system
	PeakRSSBytes int64   `json:"peak_rss_bytes"` // VmHWM
	// CreateCPUSeconds is the part of CPUSeconds spent until the tasks
	// were created, for scenarios that create them all first (throughput).
	CreateCPUSeconds float64 `json:"create_cpu_seconds,omitempty"`
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times; it is 100
// on every Linux this runs on.
const clockTicks = 100

// ReadProc reads a running process's CPU time and peak resident memory
// from /proc (Linux).
func ReadProc(pid int) (cpuSeconds float64, peakRSS int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	cpuSeconds, err = parseStatCPU(string(stat))
	if err != nil {
		return 0, 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	peakRSS, err = parseStatusHWM(string(status))
	return cpuSeconds, peakRSS, err
}

// parseStatCPU returns utime + stime of a /proc/<pid>/stat line, in
// seconds. The command name (field 2) may hold spaces and parentheses, so
// the fields are counted from the last ')'.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat: %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// After the name: state is field 3, so utime (14) and stime (15) are
	// at indexes 11 and 12 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat: %q", stat)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat times: %q %q", f[11], f[12])
	}
	return float64(u+s) / clockTicks, nil
}

// parseStatusHWM returns VmHWM of a /proc/<pid>/status file, in bytes.
func parseStatusHWM(status string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("malformed VmHWM line: %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("malformed VmHWM line: %q", line)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc status")
}
