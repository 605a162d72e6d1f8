package outbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/outbox"
)

const otherKey = "1111111111111111111111111111111111111111111111111111111111111111"

// Issue 33, finding 8: a well-formed key that cannot open the stored
// secrets is refused, naming the variable, whether the check value exists
// or (a database from before it) only sealed subscription secrets do.
func TestVerifyKeyRefusesAnotherKey(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	other, err := outbox.ParseKey(otherKey)
	require.NoError(t, err)

	// No check value, no subscription: any key; it becomes the key.
	require.NoError(t, outbox.VerifyKey(ctx, other, e.subs))
	// Still no subscription: another key replaces it.
	require.NoError(t, outbox.VerifyKey(ctx, e.sealer, e.subs))
	require.NoError(t, outbox.VerifyKey(ctx, e.sealer, e.subs), "the same key again")

	_, err = e.svc.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/h"}, "ops", "")
	require.NoError(t, err)
	err = outbox.VerifyKey(ctx, other, e.subs)
	require.ErrorIs(t, err, outbox.ErrBadSecretsKey)
	assert.ErrorContains(t, err, "ONCELEDGER_SECRETS_KEY")
	require.NoError(t, outbox.VerifyKey(ctx, e.sealer, e.subs))

	// A database from before the check value: the subscription's secret
	// decides, then the check value is written.
	_, err = e.pool.Exec(ctx, `DELETE FROM secrets_key_check`)
	require.NoError(t, err)
	err = outbox.VerifyKey(ctx, other, e.subs)
	require.ErrorIs(t, err, outbox.ErrBadSecretsKey)
	check, err := e.subs.LoadKeyCheck(ctx)
	require.NoError(t, err)
	assert.Nil(t, check, "nothing written with a refused key")
	require.NoError(t, outbox.VerifyKey(ctx, e.sealer, e.subs))
	check, err = e.subs.LoadKeyCheck(ctx)
	require.NoError(t, err)
	assert.NotNil(t, check)
}

// Creating or rotating with another key than the stored secrets' is
// refused before anything is sealed; the first creation writes the check
// value.
func TestCreateWithAnotherKeyRefused(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/h"}, "ops", "")
	require.NoError(t, err)
	check, err := e.subs.LoadKeyCheck(ctx)
	require.NoError(t, err)
	require.NotNil(t, check, "the first secret stored writes the check value")

	other, err := outbox.ParseKey(otherKey)
	require.NoError(t, err)
	svc := outbox.NewService(e.subs, e.store, outbox.ServiceOptions{Sealer: other, AllowPrivate: true})
	_, err = svc.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/h2"}, "ops", "")
	require.ErrorIs(t, err, outbox.ErrBadSecretsKey)
	_, err = svc.RotateSecret(ctx, c.Subscription.ID, "ops", "")
	require.ErrorIs(t, err, outbox.ErrBadSecretsKey)
	subs, err := e.svc.List(ctx)
	require.NoError(t, err)
	assert.Len(t, subs, 1, "nothing created")
}
