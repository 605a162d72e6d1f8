package readmodel

import (
	"encoding/binary"
	"math/bits"
	"time"
)

// Postgres' 64-bit hashes with seed 0, as hash_record_extended(ROW(...), 0)
// computes them (src/common/hashfn.c: Bob Jenkins' lookup3, the
// little-endian reading; utils/adt/rowtypes.c: the record's combination),
// for the column types the rebuild hashes in Go: a row hashed here and the
// same row hashed by the database give the same number, so a rebuild can
// checksum what it books without storing it (checksum.go). The contract
// test (checksum_test.go) holds the two to each other.

func pgRot(x uint32, k int) uint32 { return bits.RotateLeft32(x, k) }

func pgMix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= pgRot(c, 4)
	c += b
	b -= a
	b ^= pgRot(a, 6)
	a += c
	c -= b
	c ^= pgRot(b, 8)
	b += a
	a -= c
	a ^= pgRot(c, 16)
	c += b
	b -= a
	b ^= pgRot(a, 19)
	a += c
	c -= b
	c ^= pgRot(b, 4)
	b += a
	return a, b, c
}

func pgFinal(a, b, c uint32) (uint32, uint32, uint32) {
	c ^= b
	c -= pgRot(b, 14)
	a ^= c
	a -= pgRot(c, 11)
	b ^= a
	b -= pgRot(a, 25)
	c ^= b
	c -= pgRot(b, 16)
	a ^= c
	a -= pgRot(c, 4)
	b ^= a
	b -= pgRot(a, 14)
	c ^= b
	c -= pgRot(b, 24)
	return a, b, c
}

// pgHashBytes is hash_bytes_extended(k, len(k), 0): text and uuid.
func pgHashBytes(k []byte) uint64 {
	a := 0x9e3779b9 + uint32(len(k)) + 3923095
	b, c := a, a
	for len(k) >= 12 {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a, b, c = pgMix(a, b, c)
		k = k[12:]
	}
	// The last 0..11 bytes; the lowest byte of c is left to the length.
	switch len(k) {
	case 11:
		c += uint32(k[10]) << 24
		fallthrough
	case 10:
		c += uint32(k[9]) << 16
		fallthrough
	case 9:
		c += uint32(k[8]) << 8
		fallthrough
	case 8:
		b += binary.LittleEndian.Uint32(k[4:])
		a += binary.LittleEndian.Uint32(k)
	case 7:
		b += uint32(k[6]) << 16
		fallthrough
	case 6:
		b += uint32(k[5]) << 8
		fallthrough
	case 5:
		b += uint32(k[4])
		fallthrough
	case 4:
		a += binary.LittleEndian.Uint32(k)
	case 3:
		a += uint32(k[2]) << 16
		fallthrough
	case 2:
		a += uint32(k[1]) << 8
		fallthrough
	case 1:
		a += uint32(k[0])
	}
	_, b, c = pgFinal(a, b, c)
	return uint64(b)<<32 | uint64(c)
}

// pgHashString is pgHashBytes of s without copying it.
func pgHashString(s string) uint64 {
	// Strings up to this long are hashed from a stack buffer; longer ones
	// are rare (ids, account names) and pay the copy.
	var buf [96]byte
	if len(s) <= len(buf) {
		n := copy(buf[:], s)
		return pgHashBytes(buf[:n])
	}
	return pgHashBytes([]byte(s))
}

// pgHashUint32 is hash_bytes_uint32_extended(k, 0): int4, and the other
// fixed-size types through it.
func pgHashUint32(k uint32) uint64 {
	a := 0x9e3779b9 + uint32(4) + 3923095
	b, c := a, a
	a += k
	_, b, c = pgFinal(a, b, c)
	return uint64(b)<<32 | uint64(c)
}

// pgHashInt8 is hashint8extended(v, 0): bigint (and timestamptz).
func pgHashInt8(v int64) uint64 {
	lo, hi := uint32(v), uint32(v>>32)
	if v >= 0 {
		lo ^= hi
	} else {
		lo ^= ^hi
	}
	return pgHashUint32(lo)
}

// pgHashBool is hashcharextended of a boolean (bool_ops hashes it as a
// char: 0 or 1).
func pgHashBool(v bool) uint64 {
	if v {
		return pgHashUint32(1)
	}
	return pgHashUint32(0)
}

// pgEpoch is Postgres' timestamp epoch (2000-01-01 UTC), in Unix seconds.
const pgEpoch = 946684800

// pgTimestamptz is t as Postgres stores a timestamptz: microseconds since
// its epoch, truncated toward the past as pgx encodes it.
func pgTimestamptz(t time.Time) int64 {
	return t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - pgEpoch*1_000_000
}

// pgRecord combines column hashes as hash_record_extended does (a NULL
// column hashes to 0).
type pgRecord uint64

func (r pgRecord) add(h uint64) pgRecord { return pgRecord(uint64(r)<<5 - uint64(r) + h) }
