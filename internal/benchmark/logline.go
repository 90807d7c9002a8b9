package benchmark

import (
	"bufio"
	"bytes"
	"encoding/json"
	"iter"
	"time"
)

// logLine is what the benchmark reads of one line of agencysync's JSON log:
// its message and time, and for a "request" line (logged when the answer
// came) the endpoint and the request's duration in seconds.
type logLine struct {
	Msg      string    `json:"msg"`
	TS       time.Time `json:"ts"`
	Endpoint string    `json:"endpoint"`
	Duration float64   `json:"duration"`
}

// took is the duration of the request a "request" line logged.
func (l logLine) took() time.Duration { return time.Duration(l.Duration * float64(time.Second)) }

// start is when the request a "request" line logged started: ts − duration.
func (l logLine) start() time.Time { return l.TS.Add(-l.took()) }

// logLines yields the JSON lines of a worker's log in order, passing over
// the lines that are not JSON (lines up to 4 MiB are read).
func logLines(log []byte) iter.Seq[logLine] {
	return func(yield func(logLine) bool) {
		sc := bufio.NewScanner(bytes.NewReader(log))
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var l logLine
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			if !yield(l) {
				return
			}
		}
	}
}
