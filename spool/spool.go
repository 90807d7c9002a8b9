// Package spool keeps items fetched ahead — communications pages, brand and
// project details — on disk from the moment their answer is in until their
// commit, in a private folder (0700, files 0600: they hold e-mails), one
// file per key, so that a worker killed with items fetched resumes from
// them instead of asking for them again. Keys are the callers' (the request
// that fetched the item); values are JSON. The spool is an optimisation:
// when it cannot write or read a file it says so in the log and the caller
// fetches the item as without it.
package spool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// MaxAge is how long a spooled item may wait for the run that commits it;
// older files are removed when a spool is prepared.
const MaxAge = 24 * time.Hour

// Dir is a spool folder. A nil *Dir is no spool.
type Dir struct {
	dir  string
	log  *zap.Logger
	bufs sync.Pool // *[]byte: Put's encoding buffers, reused (a page's is a few MiB)
	// size is the length of the largest value Put encoded: a buffer the
	// pool no longer holds (a garbage collection empties it) is made that
	// large at once rather than grown, copied, many times over.
	size atomic.Int64
}

// Appender is a value Put can spool: it appends its JSON encoding to buf,
// which Put writes as it is (encoding/json, given a json.Marshaler, would
// check and compact its output again, which on a page costs about as much
// as encoding it). Get reads it back with encoding/json.
type Appender interface {
	AppendJSON(buf []byte) ([]byte, error)
}

// Open returns the spool of folder dir, nil for "". The folder is made when
// a run starts (Prepare) and removed when a run leaves it empty (Tidy).
func Open(dir string, log *zap.Logger) *Dir {
	if dir == "" {
		return nil
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Dir{dir: dir, log: log}
}

// Key joins the parts of a key (NUL-separated: no part can run into the next).
func Key(parts ...string) string { return strings.Join(parts, "\x00") }

// Prepare makes the folder (0700) for a run and removes files older than
// MaxAge. It returns nil, after a warning, when the folder is unusable
// or not a private folder of this user's (a shared /tmp).
func (s *Dir) Prepare() *Dir {
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
		if info, err := e.Info(); err == nil && (strings.HasPrefix(e.Name(), ".tmp-") || time.Since(info.ModTime()) > MaxAge) {
			_ = os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
	return s
}

// Tidy removes the folder if the run left it empty.
func (s *Dir) Tidy() {
	if s != nil {
		_ = os.Remove(s.dir) // fails, as it should, while pages wait in it
	}
}

func (s *Dir) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Put writes v (as JSON, see Appender) under key (a temporary file renamed
// into place, so a crash never leaves half a file under the key's name).
func (s *Dir) Put(key string, v Appender) {
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if size := int(s.size.Load()); cap(*bp) < size {
		*bp = make([]byte, 0, size+size/8)
	}
	defer s.bufs.Put(bp)
	buf, err := v.AppendJSON((*bp)[:0])
	*bp = buf
	for n, was := int64(len(buf)), s.size.Load(); n > was && !s.size.CompareAndSwap(was, n); was = s.size.Load() {
	}
	if err == nil {
		var tmp *os.File
		if tmp, err = os.CreateTemp(s.dir, ".tmp-*"); err == nil {
			_, err = tmp.Write(buf)
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

// Get reads key into v; false when there is no such file (or it is
// damaged: then it is removed).
func (s *Dir) Get(key string, v any) bool {
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("read a spooled page", zap.Error(err))
		}
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		s.log.Warn("read a spooled page", zap.Error(fmt.Errorf("decode: %w", err)))
		s.Drop(key)
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
// Get applies it to every value it reads.
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

// Drop removes key's file (after its commit).
func (s *Dir) Drop(key string) {
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("remove a spooled page", zap.Error(err))
	}
}
