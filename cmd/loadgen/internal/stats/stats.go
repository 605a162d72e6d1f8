// Package stats summarizes the load generator's latency samples. A run
// records at most a few million requests, so keeping every sample and
// sorting once is exact and cheap enough; no bucketing error to explain.
package stats

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"
)

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted, which must be sorted ascending: the smallest value such that at
// least p% of the samples are at or below it. It returns the zero value for
// no samples.
func Percentile[T cmp.Ordered](sorted []T, p float64) T {
	n := len(sorted)
	if n == 0 {
		var zero T
		return zero
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	return sorted[rank-1]
}

// Recorder collects durations from many goroutines.
type Recorder struct {
	mu      sync.Mutex
	samples []time.Duration
}

// Record adds one sample.
func (r *Recorder) Record(d time.Duration) {
	r.mu.Lock()
	r.samples = append(r.samples, d)
	r.mu.Unlock()
}

// CountAbove is the number of samples recorded so far above d.
func (r *Recorder) CountAbove(d time.Duration) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.samples {
		if s > d {
			n++
		}
	}
	return n
}

// Summary is the distribution of the samples recorded so far.
type Summary struct {
	Count int
	P50   time.Duration
	P90   time.Duration
	P99   time.Duration
	Max   time.Duration
	Mean  time.Duration
}

// Summary sorts a copy of the samples and reads the percentiles.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	s := slices.Clone(r.samples)
	r.mu.Unlock()
	return Summarize(s)
}

// Summarize sorts samples in place and reads the percentiles.
func Summarize(samples []time.Duration) Summary {
	slices.Sort(samples)
	out := Summary{Count: len(samples)}
	if len(samples) == 0 {
		return out
	}
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	out.P50 = Percentile(samples, 50)
	out.P90 = Percentile(samples, 90)
	out.P99 = Percentile(samples, 99)
	out.Max = samples[len(samples)-1]
	out.Mean = sum / time.Duration(len(samples))
	return out
}
