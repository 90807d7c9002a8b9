package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// jobKind and queueName name the fleet's jobs and their queue in River.
const (
	jobKind   = "agencysync_sync"
	queueName = "agencysync"
)

// maxAttempts bounds the retries of a sync that failed (River's backoff:
// 1 s, 16 s, 81 s, 256 s); snoozes cost no attempt. After the last one the
// job is discarded and the agency's next scheduled moment starts anew.
const maxAttempts = 5

// parked is how long a job whose key was refused waits: until a worker
// sees the agency's key files change and makes it available again.
const parked = 100 * 365 * 24 * time.Hour

// lockedRetry is how long a job waits when its agency's sync lock is held
// by another process.
const lockedRetry = time.Minute

// SyncArgs are a sync job's arguments: the agency's name, nothing else (no
// configuration, never a key). The job is unique by them.
type SyncArgs struct {
	Agency string `json:"agency" river:"unique"`
}

// Kind is the job kind of a sync.
func (SyncArgs) Kind() string { return jobKind }

// InsertOpts are a sync's insert options: the fleet's queue, few attempts,
// and unique while pending, scheduled, available, running or retryable.
func (SyncArgs) InsertOpts() river.InsertOpts { return insertOpts() }

func insertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queueName, MaxAttempts: maxAttempts, UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled},
	}}
}

// Why a job waits (hold.Reason).
const (
	holdQuota       = "quota"       // the daily quota is spent: waits for the next quota day
	holdCredentials = "credentials" // the key was refused: waits for the key files to change
	holdLocked      = "locked"      // the schema's sync lock was held elsewhere
	holdIncomplete  = "incomplete"  // a range was not landed whole: the next scheduled moment
	holdFile        = "fleet_file"  // its agency is unknown while FLEET_FILE does not read
)

// hold is a job's recorded output: why it waits, if it does.
type hold struct {
	Reason string `json:"hold,omitempty"`
	// Stamp is keyStamp of the agency's key files when the key was refused.
	Stamp string `json:"key_stamp,omitempty"`
	// Day is the quota day whose quota was spent.
	Day string `json:"quota_day,omitempty"`
	// Note says it in words, for fleet status.
	Note string `json:"note,omitempty"`
}

// holdOf reads a job's recorded output (a zero hold when it has none).
func holdOf(j *rivertype.JobRow) hold {
	var h hold
	if out := j.Output(); len(out) > 0 {
		_ = json.Unmarshal(out, &h)
	}
	return h
}

// keyStamp is a digest of an agency's key files' contents: a key change is
// a change of the stamp. It is kept in the database (a parked job's output),
// so it is a truncated SHA-256 under a fixed prefix and the agency's name:
// it tells contents apart and gives no key away. A file that cannot be
// read counts as empty (its error surfaces when the configuration loads).
func keyStamp(agency string, files []string) string {
	h := sha256.New()
	h.Write([]byte("agencysync fleet key stamp\x00" + agency + "\x00"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		h.Write([]byte(f + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
