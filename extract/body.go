package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultMaxBodyBytes is Options.MaxBodyBytes's default: the largest
// legitimate page, 1000 e-mails with their bodies at 32 KiB each (about
// 3 KiB of envelope and participants and 10 KiB of text that JSON's escapes
// can more than double), is 32 MiB.
const DefaultMaxBodyBytes = 32 << 20

// Reading bodies within a budget. Every request in flight reads its body
// into memory (the records are split from it), so without a bound the
// memory a client needs grows with the number in flight times the largest
// body a server may send — a gzip bomb inflates to gigabytes. A client's
// readers therefore share one budget:
//
//   - each reader first takes up to readerAllowance bytes of a shared pool
//     of smallPool bytes (waiting, holding nothing, while the pool is
//     taken); the bodies of a page of records fit in it;
//   - a reader whose body outgrows its allowance waits for the one big
//     reader's place (the only one allowed to grow, up to MaxBodyBytes),
//     holding its allowance: the big reader waits for nothing else, so no
//     reader waits forever;
//   - memory grows in chunks, never by doubling and copying, and a body in
//     several chunks is joined once it is complete; a body past
//     MaxBodyBytes is dropped as it reaches it.
//
// So the bodies held at once stay within smallPool + MaxBodyBytes (plus the
// copy of a complete body being joined), whatever the number in flight.
type memBudget struct {
	small     *semaphore.Weighted // smallPool bytes of allowances
	big       *semaphore.Weighted // weight 1: the reader that may grow to the limit
	allowance int64
	held      atomic.Int64 // bytes in the buffers of readers now
	peak      atomic.Int64 // the most held at once
}

const (
	// readerAllowance is what a reader may hold without the big reader's
	// place: a page of 1000 e-mails without bodies is about 1.1 MiB.
	readerAllowance = 8 << 20
	// smallPoolReaders is how many allowances the shared pool holds.
	smallPoolReaders = 2
	// chunkSize is the unit in which a body of unknown length grows.
	chunkSize = 256 << 10
	// maxErrorBody bounds what is read of an answer with an error status:
	// its message is in its first bytes.
	maxErrorBody = 1 << 20
)

func newMemBudget(limit int64) *memBudget {
	allowance := min(readerAllowance, max(limit+1, chunkSize))
	return &memBudget{
		small:     semaphore.NewWeighted(smallPoolReaders * allowance),
		big:       semaphore.NewWeighted(1),
		allowance: allowance,
	}
}

// errTooLarge is readBody's error for a body past its limit.
var errTooLarge = errors.New("body too large")

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// joinPool keeps the buffers complete bodies are joined into (up to
// maxPooledBuf bytes each).
var joinPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf: larger buffers are dropped rather than kept in the pool.
const maxPooledBuf = 16 << 20

// body is a body read within the budget; release gives its memory back
// (once; b is not to be used after).
type body struct {
	b        []byte
	m        *memBudget
	reserved int64 // of the small pool
	bigHeld  bool
	chunk    *[chunkSize]byte // the body's one chunk, when it fits one
	joined   *[]byte          // the pooled buffer holding b, else
	counted  int64            // bytes counted in m.held
}

// release returns the body's buffers and budget.
func (bd *body) release() {
	if bd == nil || bd.m == nil {
		return
	}
	m := bd.m
	bd.m = nil
	m.held.Add(-bd.counted)
	if bd.chunk != nil {
		chunkPool.Put(bd.chunk)
	}
	if bd.joined != nil && cap(*bd.joined) <= maxPooledBuf {
		joinPool.Put(bd.joined)
	}
	if bd.bigHeld {
		m.big.Release(1)
	}
	if bd.reserved > 0 {
		m.small.Release(bd.reserved)
	}
	bd.b = nil
}

// hold counts n more bytes held by readers.
func (m *memBudget) hold(bd *body, n int64) {
	bd.counted += n
	h := m.held.Add(n)
	for p := m.peak.Load(); h > p && !m.peak.CompareAndSwap(p, h); p = m.peak.Load() {
	}
}

// readBody reads r (known bytes long, or -1 when unknown) into memory
// within the budget, up to limit bytes: past them it stops at once and
// returns errTooLarge (n then says limit+1). The caller releases the body.
func (m *memBudget) readBody(ctx context.Context, r io.Reader, known, limit int64) (*body, int64, error) {
	if known > limit {
		return nil, limit + 1, errTooLarge
	}
	bd := &body{m: m, reserved: m.allowance}
	if known >= 0 && known < m.allowance {
		bd.reserved = max(known, 1)
	}
	if err := m.small.Acquire(ctx, bd.reserved); err != nil {
		return nil, 0, err
	}
	if known > m.allowance {
		if err := m.big.Acquire(ctx, 1); err != nil {
			m.small.Release(bd.reserved)
			return nil, 0, err
		}
		bd.bigHeld = true
	}
	var n int64
	var err error
	if known >= 0 {
		n, err = bd.readKnown(r, known)
	} else {
		n, err = bd.readChunks(ctx, r, limit)
	}
	if err != nil {
		bd.release()
		return nil, n, err
	}
	return bd, n, nil
}

// readKnown reads a body of a known length into one buffer of that size.
func (bd *body) readKnown(r io.Reader, known int64) (int64, error) {
	bd.m.hold(bd, known)
	p := joinPool.Get().(*[]byte)
	if int64(cap(*p)) < known {
		*p = make([]byte, known)
	}
	bd.joined, bd.b = p, (*p)[:known]
	n, err := io.ReadFull(r, bd.b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) && known > 0 {
		err = io.ErrUnexpectedEOF
	}
	return int64(n), err
}

// readChunks reads a body of unknown length in chunks, taking the big
// reader's place when it outgrows the allowance, and joins them.
func (bd *body) readChunks(ctx context.Context, r io.Reader, limit int64) (int64, error) {
	var chunks []*[chunkSize]byte
	defer func() {
		for _, c := range chunks {
			chunkPool.Put(c)
		}
	}()
	var n int64
	for {
		if n%chunkSize == 0 {
			if n >= bd.m.allowance && !bd.bigHeld {
				if err := bd.m.big.Acquire(ctx, 1); err != nil {
					return n, err
				}
				bd.bigHeld = true
			}
			chunks = append(chunks, chunkPool.Get().(*[chunkSize]byte))
			bd.m.hold(bd, chunkSize)
		}
		c := chunks[len(chunks)-1]
		k, err := r.Read(c[n%chunkSize:])
		n += int64(k)
		if n > limit {
			return limit + 1, errTooLarge
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if len(chunks) == 1 {
		bd.chunk, bd.b = chunks[0], chunks[0][:n]
		chunks = nil
		return n, nil
	}
	p := joinPool.Get().(*[]byte)
	if int64(cap(*p)) < n {
		*p = make([]byte, n)
	}
	bd.joined, bd.b = p, (*p)[:n]
	for i, c := range chunks {
		copy(bd.b[int64(i)*chunkSize:], c[:])
	}
	return n, nil
}

// tooLarge is the error of a body past the client's limit, naming it and
// the setting that raises it.
func (c *Client) tooLarge(cl *call) error {
	return &ResponseError{Endpoint: cl.endpoint, Page: cl.page, Kind: ErrResponseTooLarge,
		Reason: fmt.Sprintf("the body exceeds the %s cap of %s = %d bytes (counted after decompression and decoding); raise %s if the service's answers are legitimately that large",
			formatBytes(c.maxBody), c.names.MaxBodyBytes, c.maxBody, c.names.MaxBodyBytes)}
}

// formatBytes writes n in MiB or KiB when it is a whole number of them.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d-byte", n)
}
