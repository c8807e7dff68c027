package scheduler

import (
	"net/url"
	"strings"
	"sync"
	"time"
)

// startLimiter spaces the starts of deliveries to rate-limited hosts: seed
// 000's start rate limit (one start per 5 s per target), as a per-host
// option. A start that comes too soon waits in its host's queue, first in
// first out; it is never dropped.
type startLimiter struct {
	intervals map[string]time.Duration // host (as in the URL, lower case) -> minimum spacing
	release   func(job)                // hands a job to the delivery workers

	mu     sync.Mutex
	hosts  map[string]*hostQueue
	closed bool
}

type hostQueue struct {
	next  time.Time // earliest next start
	q     []job
	timer *time.Timer
}

func newStartLimiter(intervals map[string]time.Duration, release func(job)) *startLimiter {
	if len(intervals) == 0 {
		return nil
	}
	norm := make(map[string]time.Duration, len(intervals))
	for h, d := range intervals {
		norm[strings.ToLower(h)] = d
	}
	return &startLimiter{intervals: norm, release: release, hosts: make(map[string]*hostQueue)}
}

// take reports whether the job's host is rate-limited; if so the limiter
// owns the job and releases it when its turn comes.
func (l *startLimiter) take(j job) bool {
	if l == nil {
		return false
	}
	u, err := url.Parse(j.task.TargetURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Host)
	interval, ok := l.intervals[host]
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return true // stopping: the run stays for RunRelease
	}
	hq := l.hosts[host]
	if hq == nil {
		hq = &hostQueue{}
		l.hosts[host] = hq
	}
	now := time.Now()
	if len(hq.q) == 0 && !now.Before(hq.next) {
		hq.next = now.Add(interval)
		go l.release(j)
		return true
	}
	hq.q = append(hq.q, j)
	if hq.timer == nil {
		hq.timer = time.AfterFunc(hq.next.Sub(now), func() { l.turn(host, interval) })
	}
	return true
}

// turn releases the next queued start of host and schedules the one after.
func (l *startLimiter) turn(host string, interval time.Duration) {
	l.mu.Lock()
	hq := l.hosts[host]
	if l.closed || len(hq.q) == 0 {
		hq.timer = nil
		l.mu.Unlock()
		return
	}
	j := hq.q[0]
	hq.q = hq.q[1:]
	hq.next = time.Now().Add(interval)
	if len(hq.q) > 0 {
		hq.timer = time.AfterFunc(interval, func() { l.turn(host, interval) })
	} else {
		hq.timer = nil
	}
	l.mu.Unlock()
	l.release(j)
}

// queued counts the starts waiting for their turn.
func (l *startLimiter) queued() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, hq := range l.hosts {
		n += len(hq.q)
	}
	return n
}

// stop drops the waiting starts (their runs stay RUNNING for RunRelease to
// record as INTERRUPTED) and stops the timers.
func (l *startLimiter) stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, hq := range l.hosts {
		if hq.timer != nil {
			hq.timer.Stop()
		}
		hq.q = nil
	}
}
