package providers

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
)

// HMAC-SHA256 with a pool of keyed hashers per key. Every webhook of an
// HMAC-signed provider is checked against each configured secret, and
// hmac.New costs four allocations (the state, two digests, the padded
// key) before a byte is hashed: a keyed hasher reset between uses costs
// none. The keys are the few configured secrets; the pools live as long as
// the process.
var macPools struct {
	mu    sync.RWMutex
	pools map[string]*sync.Pool
}

func macPool(key []byte) *sync.Pool {
	macPools.mu.RLock()
	p := macPools.pools[string(key)]
	macPools.mu.RUnlock()
	if p != nil {
		return p
	}
	macPools.mu.Lock()
	defer macPools.mu.Unlock()
	if p = macPools.pools[string(key)]; p == nil {
		k := append([]byte(nil), key...)
		p = &sync.Pool{New: func() any { return hmac.New(sha256.New, k) }}
		if macPools.pools == nil {
			macPools.pools = map[string]*sync.Pool{}
		}
		macPools.pools[string(k)] = p
	}
	return p
}

// MACSHA256 returns the HMAC-SHA256 under key of parts written one after
// the other: hmac.New(sha256.New, key), each part written, Sum(nil).
func MACSHA256(key []byte, parts ...[]byte) []byte {
	p := macPool(key)
	h := p.Get().(hash.Hash)
	h.Reset()
	for _, b := range parts {
		h.Write(b)
	}
	sum := h.Sum(make([]byte, 0, sha256.Size))
	p.Put(h)
	return sum
}
