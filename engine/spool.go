package engine

import (
	"encoding/json"
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/spool"
	"github.com/agencysync/agencysync/transform"
)

// pageSpool keeps each page of the mail hooks' ranges and each entity's detail and
// child lists from the moment its answer is in until its commit, in a file of its own: a
// worker killed while loading page n, with page n+1 already fetched, resumes
// from both files instead of asking for them again, so a crash loses at most
// the request in flight — prefetching costs no request. The files live in a private folder (0700,
// files 0600: they hold e-mails) and are removed once their page commits.
//
// A file is found again only by the same request: a page's key covers the
// warehouse schema, the range's query (domain, users, brand, dates, with
// message) and the page number, and the page size answered is checked
// against the cursor's; a detail's key covers the entity and the hash of its
// list entry, so a changed entity is fetched anew. A spooled page is what the service answered when it was
// fetched: using it is the same as having committed it then (as any
// committed page of an unfinished run is used). The spool is an
// optimisation: when it cannot write or read a file it says so in the log
// and the page is fetched as without it.
type pageSpool struct {
	dir    *spool.Dir
	schema string
}

// openSpool returns the spool of dir, nil for "".
func openSpool(dir, schema string, log *zap.Logger) *pageSpool {
	if dir == "" {
		return nil
	}
	return &pageSpool{dir: spool.Open(dir, log), schema: schema}
}

// prepare makes the folder for a run (see spool.Dir.Prepare); nil when it
// is unusable.
func (s *pageSpool) prepare() *pageSpool {
	if s == nil || s.dir.Prepare() == nil {
		return nil
	}
	return s
}

// tidy removes the folder if the run left it empty.
func (s *pageSpool) tidy() {
	if s != nil {
		s.dir.Tidy()
	}
}

// put writes v under key.
func (s *pageSpool) put(key string, v spool.Appender) { s.dir.Put(key, v) }

// get reads key into v; false when there is no such file.
func (s *pageSpool) get(key string, v any) bool { return s.dir.Get(key, v) }

// drop removes key's file (after its commit).
func (s *pageSpool) drop(key string) { s.dir.Drop(key) }

// spooledPage is a transformed page of the mail hooks' range, as spooled (JSON: it
// keeps nil pointers apart from pointers to zero values, which gob does not).
type spooledPage struct {
	Number, PerPage, Total, LastPage, Rows int
	Paged                                  bool    // the answer carried paging fields
	IDs                                    []int64 // record ids of the page's rows (those that have one)
	FirstID, LastID                        int64   // lowest and highest of IDs
	HasIDs                                 bool    // IDs is not empty
	Batch                                  transform.Batch
}

// AppendJSON appends p as encoding/json writes it (get reads it so), the
// batch by its own appender (spool.Appender).
func (p *spooledPage) AppendJSON(buf []byte) ([]byte, error) {
	buf = appendInt(buf, `{"Number":`, int64(p.Number))
	buf = appendInt(buf, `,"PerPage":`, int64(p.PerPage))
	buf = appendInt(buf, `,"Total":`, int64(p.Total))
	buf = appendInt(buf, `,"LastPage":`, int64(p.LastPage))
	buf = appendInt(buf, `,"Rows":`, int64(p.Rows))
	buf = strconv.AppendBool(append(buf, `,"Paged":`...), p.Paged)
	ids, err := json.Marshal(p.IDs) // a few microseconds a page
	if err != nil {
		return nil, fmt.Errorf("encode spooled page ids: %w", err)
	}
	buf = append(append(buf, `,"IDs":`...), ids...)
	buf = appendInt(buf, `,"FirstID":`, p.FirstID)
	buf = appendInt(buf, `,"LastID":`, p.LastID)
	buf = strconv.AppendBool(append(buf, `,"HasIDs":`...), p.HasIDs)
	if buf, err = p.Batch.AppendJSON(append(buf, `,"Batch":`...)); err != nil {
		return nil, fmt.Errorf("encode spooled page: %w", err)
	}
	return append(buf, '}'), nil
}

// spooledDetail is one answered request of an entity — its detail or one
// of its child lists — transformed, as spooled.
type spooledDetail struct {
	Batch transform.Batch
	// Child is a child list's verdict (nil for a detail).
	Child *childList `json:",omitempty"`
	// Missing: the detail answered 404 while the entity has child lists.
	Missing bool `json:",omitempty"`
	// Rejected: the detail did not decode; Batch holds its reject.
	Rejected bool `json:",omitempty"`
}

// AppendJSON appends d as encoding/json writes it (get reads it so), the
// batch by its own appender (spool.Appender).
func (d *spooledDetail) AppendJSON(buf []byte) ([]byte, error) {
	buf, err := d.Batch.AppendJSON(append(buf, `{"Batch":`...))
	if err != nil {
		return nil, fmt.Errorf("encode spooled detail: %w", err)
	}
	if d.Child != nil {
		child, err := json.Marshal(d.Child)
		if err != nil {
			return nil, fmt.Errorf("encode spooled detail: %w", err)
		}
		buf = append(append(buf, `,"Child":`...), child...)
	}
	if d.Missing {
		buf = append(buf, `,"Missing":true`...)
	}
	if d.Rejected {
		buf = append(buf, `,"Rejected":true`...)
	}
	return append(buf, '}'), nil
}

// appendInt appends key (the JSON text before a member's value) and n.
func appendInt(buf []byte, key string, n int64) []byte {
	return strconv.AppendInt(append(buf, key...), n, 10)
}

// detailKey is the key of one answer of an entity of stream — its detail
// or a child list, by endpoint: the entity, the hash of its list entry (a
// changed entity is another key) and the endpoint.
func (s *pageSpool) detailKey(stream, id, hash, endpoint string) string {
	return spool.Key("detail", s.schema, stream, id, hash, endpoint)
}
