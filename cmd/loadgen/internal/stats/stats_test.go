package stats

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ms(xs ...int) []time.Duration {
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	s := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 5 * time.Millisecond}, {90, 9 * time.Millisecond}, {99, 10 * time.Millisecond},
		{100, 10 * time.Millisecond}, {10, 1 * time.Millisecond}, {11, 2 * time.Millisecond},
		{0, 1 * time.Millisecond}, {0.1, 1 * time.Millisecond},
	} {
		assert.Equal(t, c.want, Percentile(s, c.p), "p%v", c.p)
	}
	assert.Zero(t, Percentile([]time.Duration(nil), 99), "empty p99")
	assert.Equal(t, 7*time.Millisecond, Percentile(ms(7), 50), "single p50")
}

// One slow request in a hundred must show at p99 only with more than 1% slow:
// the classic off-by-one of percentile code.
func TestPercentileTail(t *testing.T) {
	s := make([]time.Duration, 1000)
	for i := range s {
		s[i] = time.Millisecond
	}
	for i := 990; i < 1000; i++ { // exactly 1% slow
		s[i] = time.Second
	}
	assert.Equal(t, time.Millisecond, Percentile(s, 99), "p99 with exactly 1%% slow")
	s[989] = time.Second // 1.1% slow
	assert.Equal(t, time.Second, Percentile(s, 99), "p99 with 1.1%% slow")
}

func TestPercentileMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(500)
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(rng.IntN(1000))
		}
		slices.Sort(s)
		p := 100 * rng.Float64()
		got := Percentile(s, p)
		below := 0
		for _, v := range s {
			if v <= got {
				below++
			}
		}
		require.GreaterOrEqual(t, float64(below), p/100*float64(n)-1e-9, "p%.3f=%v covers %d/%d", p, got, below, n)
		// No smaller sample value satisfies the definition.
		strictly := 0
		for _, v := range s {
			if v < got {
				strictly++
			}
		}
		require.False(t, strictly > 0 && float64(strictly) >= p/100*float64(n), "p%.3f=%v is not the smallest: %d/%d below it", p, got, strictly, n)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	var r Recorder
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 100; i++ {
				r.Record(time.Duration(g*100+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	s := r.Summary()
	assert.True(t, s.Count == 3200 && s.Max == 3200*time.Microsecond && s.P50 == 1600*time.Microsecond, "summary %+v", s)
	assert.Equal(t, 1600500*time.Nanosecond, s.Mean, "mean")
}

func TestPercentileOtherTypes(t *testing.T) {
	assert.Equal(t, int64(5), Percentile([]int64{3, 5, 8, 13}, 50), "int64 p50")
	assert.Equal(t, 0.3, Percentile([]float64{0.1, 0.2, 0.3}, 99), "float p99")
}

func TestCountAbove(t *testing.T) {
	var r Recorder
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, time.Second} {
		r.Record(d)
	}
	assert.Equal(t, 2, r.CountAbove(time.Millisecond), "strictly above")
	assert.Equal(t, 4, r.Summary().Count)
}
