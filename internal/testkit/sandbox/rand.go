package sandbox

import "math/bits"

// Every generated value comes from a small counter-based generator keyed by
// (seed, tag, id): a record can be derived on its own, in any order, without
// holding the others. The mixing function is the SplitMix64 finaliser.

// Tags separate the generator streams of different kinds of values.
const (
	tagPeople uint64 = iota + 1
	tagOutsider
	tagBrand
	tagProject
	tagFinance
	tagIDs
	tagEmailTime
	tagEmailID
	tagThread
	tagTopic
	tagEmail
	tagEmailOutsider
	tagMailbox
	tagBad
	tagRequest
	tagBrandWeight
)

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// rng is a SplitMix64 stream.
type rng struct{ s uint64 }

func newRNG(seed int64, tag, id uint64) rng {
	return rng{s: mix64(uint64(seed)*0xd1b54a32d192ed03 ^ tag*0x9e3779b97f4a7c15 ^ id*0x8cb92ba72f3d8dd7)}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// intn returns a value in [0, n); n must be positive.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// between returns a value in [lo, hi] (inclusive).
func (r *rng) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + r.intn(hi-lo+1)
}

// float returns a value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// chance reports true with probability p.
func (r *rng) chance(p float64) bool { return r.float() < p }

// pick returns one element of list.
func pick[T any](r *rng, list []T) T { return list[r.intn(len(list))] }

// unitHash is a deterministic value in [0, 1) for (seed, tag, id).
func unitHash(seed int64, tag, id uint64) float64 {
	r := newRNG(seed, tag, id)
	return r.float()
}

// firstName is a Romanian first name, a woman's or a man's with even odds.
func firstName(r *rng) string {
	if r.chance(0.5) {
		return pick(r, firstNamesFemale)
	}
	return pick(r, firstNamesMale)
}

// drawPhone is a person's phone as the service gives it: a Romanian number
// with probability withNumber, else an empty string up to 0.85, else null.
func drawPhone(r *rng, withNumber float64) (phone string, null bool) {
	switch x := r.float(); {
	case x < withNumber:
		return romanianPhone(r), false
	case x < 0.85:
		return "", false
	default:
		return "", true
	}
}
