package sessionstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/access"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/sessionstore"
)

func TestConsoleSessionsLifecycle(t *testing.T) {
	ctx := context.Background()
	st := sessionstore.New(pgtest.NewPool(t))
	now := time.Now().UTC().Truncate(time.Microsecond)
	s := access.Session{
		IDHash: sha256.Sum256([]byte("id-1")), Actor: "ops", Role: access.Admin,
		TokenDigest: access.DigestOf("tok"), CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}
	require.NoError(t, st.Create(ctx, s))

	got, ok, err := st.Get(ctx, s.IDHash, now)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, s.Actor, got.Actor)
	assert.Equal(t, s.Role, got.Role)
	assert.Equal(t, s.TokenDigest, got.TokenDigest)
	assert.True(t, s.ExpiresAt.Equal(got.ExpiresAt))

	_, ok, err = st.Get(ctx, s.IDHash, now.Add(2*time.Hour))
	require.NoError(t, err)
	assert.False(t, ok, "expired")

	require.NoError(t, st.Delete(ctx, s.IDHash))
	_, ok, err = st.Get(ctx, s.IDHash, now)
	require.NoError(t, err)
	assert.False(t, ok, "signed out")
	require.NoError(t, st.Delete(ctx, s.IDHash), "deleting twice is fine")
}

func TestConsoleSessionsConcurrentAndPurged(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	st := sessionstore.New(pool)
	past := time.Now().Add(-48 * time.Hour)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			s := access.Session{
				IDHash: sha256.Sum256(fmt.Appendf(nil, "old-%d", i)), Actor: "a", Role: access.Read,
				TokenDigest: access.DigestOf("t"), CreatedAt: past, ExpiresAt: past.Add(time.Hour),
			}
			assert.NoError(t, st.Create(ctx, s))
		})
	}
	wg.Wait()
	now := time.Now()
	require.NoError(t, st.Create(ctx, access.Session{
		IDHash: sha256.Sum256([]byte("new")), Actor: "a", Role: access.Read,
		TokenDigest: access.DigestOf("t"), CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions`).Scan(&n))
	assert.Equal(t, 1, n, "a sign-in deletes expired sessions")
}

// A writer token (the order service's) may sign in to the console too:
// its session keeps its role (migration 00130 admits it).
func TestConsoleSessionOfAWriter(t *testing.T) {
	ctx := context.Background()
	st := sessionstore.New(pgtest.NewPool(t))
	now := time.Now().UTC().Truncate(time.Microsecond)
	s := access.Session{IDHash: sha256.Sum256([]byte("w-1")), Actor: "shop", Role: access.Writer,
		TokenDigest: access.DigestOf("w"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	require.NoError(t, st.Create(ctx, s))
	got, ok, err := st.Get(ctx, s.IDHash, now)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, access.Writer, got.Role)
	require.False(t, got.Role.CanAct())
}
