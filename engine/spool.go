package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/transform"
)

// spoolMaxAge is how long a spooled page may wait for the run that commits
// it; older files are removed when a spool opens.
const spoolMaxAge = 24 * time.Hour

// pageSpool keeps each communications page and each brand or project detail
// from the moment its answer is in until its commit, in a file of its own: a
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
	dir    string
	schema string
	log    *zap.Logger
}

// openSpool returns the spool of dir, nil for "". The folder is made when a
// run starts (prepare) and removed when a run leaves it empty (tidy).
func openSpool(dir, schema string, log *zap.Logger) *pageSpool {
	if dir == "" {
		return nil
	}
	return &pageSpool{dir: dir, schema: schema, log: log}
}

// prepare makes the folder (0700) for a run and removes files older than
// spoolMaxAge. It returns nil, after a warning, when the folder is unusable
// or not a private folder of this user's (a shared /tmp).
func (s *pageSpool) prepare() *pageSpool {
	if s == nil {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		s.log.Warn("page spool unavailable: a crash may cost the prefetched page", zap.String("dir", s.dir), zap.Error(err))
		return nil
	}
	if fi, err := os.Lstat(s.dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ownedByUs(fi) {
		s.log.Warn("page spool unavailable: the folder is not a private folder of this user's; a crash may cost the prefetched page",
			zap.String("dir", s.dir))
		return nil
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.log.Warn("page spool unavailable: a crash may cost the prefetched page", zap.String("dir", s.dir), zap.Error(err))
		return nil
	}
	// Half-written files of a killed run (the run holds the sync lock, so no
	// other writer is at work) and files past their age go.
	for _, e := range entries {
		if info, err := e.Info(); err == nil && (strings.HasPrefix(e.Name(), ".tmp-") || time.Since(info.ModTime()) > spoolMaxAge) {
			_ = os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
	return s
}

// tidy removes the folder if the run left it empty.
func (s *pageSpool) tidy() {
	if s != nil {
		_ = os.Remove(s.dir) // fails, as it should, while pages wait in it
	}
}

// spooledPage is a transformed communications page, as spooled (JSON: it
// keeps nil pointers apart from pointers to zero values, which gob does not).
type spooledPage struct {
	Number, PerPage, Total, LastPage, Rows int
	Paged                                  bool    // the answer carried paging fields
	IDs                                    []int64 // record ids of the page's rows (those that have one)
	FirstID, LastID                        int64   // lowest and highest of IDs
	HasIDs                                 bool    // IDs is not empty
	Batch                                  transform.Batch
}

// spooledDetail is a transformed brand or project detail, as spooled.
type spooledDetail struct {
	Batch         transform.Batch
	Contacts      bool
	ContactsShort bool
}

// pageKey is the key of a communications page: the range's request and
// the page number.
func (s *pageSpool) pageKey(set Settings, from, to string, page int) string {
	ids := make([]string, len(set.UserIDs))
	for i, id := range set.UserIDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join([]string{"communications", s.schema, strconv.FormatInt(set.DomainID, 10), strings.Join(ids, ","),
		set.BrandURL, set.WithMessage, from, to, strconv.Itoa(page)}, "\x00")
}

// detailKey is the key of a brand's or project's detail: the entity and
// the hash of its list entry (a changed entity is another key).
func (s *pageSpool) detailKey(stream, id, hash string) string {
	return strings.Join([]string{"detail", s.schema, stream, id, hash}, "\x00")
}

func (s *pageSpool) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// put writes v under key (a temporary file renamed into place, so a crash
// never leaves half a file under the key's name).
func (s *pageSpool) put(key string, v any) {
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode(v)
	if err == nil {
		var tmp *os.File
		if tmp, err = os.CreateTemp(s.dir, ".tmp-*"); err == nil {
			_, err = tmp.Write(buf.Bytes())
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp.Name(), s.path(key))
			}
			if err != nil {
				_ = os.Remove(tmp.Name())
			}
		}
	}
	if err != nil {
		s.log.Warn("spool a fetched page", zap.Error(err))
	}
}

// get reads key into v; false when there is no such file (or it is
// damaged: then it is removed).
func (s *pageSpool) get(key string, v any) bool {
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("read a spooled page", zap.Error(err))
		}
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		s.log.Warn("read a spooled page", zap.Error(fmt.Errorf("decode: %w", err)))
		s.drop(key)
		return false
	}
	nilNullJSON(reflect.ValueOf(v))
	return true
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// nilNullJSON undoes the one thing a JSON round trip changes in a batch: a
// nil json.RawMessage (an absent raw column, stored as SQL NULL) comes back
// as the JSON literal null. A raw column from a decoded record is never the
// literal null (see transform's recordJSON), so every null is set back to nil.
func nilNullJSON(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			nilNullJSON(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				nilNullJSON(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type() == rawMessageType {
			if string(v.Bytes()) == "null" && v.CanSet() {
				v.SetZero()
			}
			return
		}
		for i := range v.Len() {
			nilNullJSON(v.Index(i))
		}
	}
}

// drop removes key's file (after its commit).
func (s *pageSpool) drop(key string) {
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("remove a spooled page", zap.Error(err))
	}
}
