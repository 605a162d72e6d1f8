package access_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/access"
)

func TestRolesAndActors(t *testing.T) {
	tokens, err := access.Parse("alice=read-secret, bare-read-token,", "ops=admin-secret,dGVzdA==")
	require.NoError(t, err)
	require.True(t, tokens.Configured())

	p, ok := tokens.Authenticate("read-secret")
	require.True(t, ok)
	assert.Equal(t, access.Principal{Actor: "alice", Role: access.Read}, p)
	assert.False(t, p.CanAct())

	p, ok = tokens.Authenticate("admin-secret")
	require.True(t, ok)
	assert.Equal(t, access.Principal{Actor: "ops", Role: access.Admin}, p)
	assert.True(t, p.CanAct())

	// Unnamed: a stable, non-secret actor derived from the token's hash.
	p, ok = tokens.Authenticate("bare-read-token")
	require.True(t, ok)
	assert.Equal(t, access.Read, p.Role)
	assert.Regexp(t, `^token-[0-9a-f]{6}$`, p.Actor)
	again, err := access.Parse("bare-read-token", "")
	require.NoError(t, err)
	p2, _ := again.Authenticate("bare-read-token")
	assert.Equal(t, p.Actor, p2.Actor, "actor is stable across parses (restarts, instances)")
	assert.NotContains(t, p.Actor, "bare")

	// Base64 padding is part of a bare token, not a name separator.
	p, ok = tokens.Authenticate("dGVzdA==")
	require.True(t, ok)
	assert.Equal(t, access.Admin, p.Role)
	assert.Regexp(t, `^token-[0-9a-f]{6}$`, p.Actor)

	// A name is not a token.
	for _, bad := range []string{"", "alice", "ops", "read-secret ", "admin-secre", "alice=read-secret"} {
		_, ok := tokens.Authenticate(bad)
		assert.False(t, ok, "%q must not authenticate", bad)
	}
}

func TestNamedTokenMayContainEquals(t *testing.T) {
	tokens, err := access.Parse("ci=abc=def==", "")
	require.NoError(t, err)
	p, ok := tokens.Authenticate("abc=def==")
	require.True(t, ok)
	assert.Equal(t, "ci", p.Actor)
}

func TestNoTokensAuthenticatesNobody(t *testing.T) {
	for _, tokens := range []*access.Tokens{nil, {}, mustParse(t, "", ""), mustParse(t, " , ,", ",")} {
		assert.False(t, tokens.Configured())
		_, ok := tokens.Authenticate("")
		assert.False(t, ok)
		_, ok = tokens.Authenticate("anything")
		assert.False(t, ok)
	}
}

func TestBadListsAreRefused(t *testing.T) {
	for _, c := range []struct{ read, admin, want string }{
		{"same", "same", "ONCELEDGER_ADMIN_TOKENS entry 1: the same token is already listed (as read)"},
		{"a=x,b=x", "", "ONCELEDGER_API_TOKENS entry 2: the same token is already listed"},
		{"=tok", "", `name ""`},
		{"", "bad name=tok", `name "bad name"`},
	} {
		_, err := access.Parse(c.read, c.admin)
		require.ErrorIs(t, err, access.ErrBadTokenList, "%+v", c)
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestSessionLookupByDigest(t *testing.T) {
	tokens := mustParse(t, "", "ops=admin-secret")
	p, ok := tokens.Lookup(access.DigestOf("admin-secret"))
	require.True(t, ok)
	assert.Equal(t, "ops", p.Actor)
	// The token was removed from the configuration: its sessions die.
	rotated := mustParse(t, "", "ops=new-secret")
	_, ok = rotated.Lookup(access.DigestOf("admin-secret"))
	assert.False(t, ok)
}

func TestConcurrentAuthenticate(t *testing.T) {
	tokens := mustParse(t, "r1,r2,r3", "a1,a2")
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for range 200 {
				p, ok := tokens.Authenticate([]string{"r1", "r2", "r3", "a1", "a2"}[i%5])
				assert.True(t, ok)
				assert.Equal(t, i%5 >= 3, p.CanAct())
			}
		})
	}
	wg.Wait()
}

func mustParse(t *testing.T, read, admin string) *access.Tokens {
	t.Helper()
	tokens, err := access.Parse(read, admin)
	require.NoError(t, err)
	return tokens
}

// A writer token reads and registers expected payments, and never acts; a
// token listed as writer and as anything else is refused.
func TestWriterRole(t *testing.T) {
	tokens, err := access.NewWithWriters([]string{"r"}, []string{"shop=w-secret"}, []string{"a"})
	require.NoError(t, err)
	p, ok := tokens.Authenticate("w-secret")
	require.True(t, ok)
	assert.Equal(t, access.Principal{Actor: "shop", Role: access.Writer}, p)
	assert.False(t, p.CanAct(), "a writer never acts")
	assert.True(t, p.CanExpect())
	a, _ := tokens.Authenticate("a")
	assert.True(t, a.CanExpect(), "an admin may register expected payments too")
	r, _ := tokens.Authenticate("r")
	assert.False(t, r.CanExpect())

	_, err = access.NewWithWriters(nil, []string{"same"}, []string{"same"})
	require.ErrorIs(t, err, access.ErrBadTokenList)
	assert.Contains(t, err.Error(), "ONCELEDGER_WRITER_TOKENS")
}
