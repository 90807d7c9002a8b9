package engine

import (
	"github.com/agencysync/agencysync/config"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// cancellingStore cancels the rebuild's context after a number of its
// commits: a signal arriving mid-way.
type cancellingStore struct {
	*load.Store
	after   int32
	commits atomic.Int32
	cancel  context.CancelFunc
}

func (c *cancellingStore) CommitRebuild(ctx context.Context, runID string, p load.RebuildPage, resolved []int64) (load.Counts, int64, error) {
	counts, n, err := c.Store.CommitRebuild(ctx, runID, p, resolved)
	if c.commits.Add(1) == c.after {
		c.cancel()
	}
	return counts, n, err
}

func mappedStreams(t *testing.T, fieldMap string) []*stream.Stream {
	t.Helper()
	var pairs config.FieldMapPairs // AGENCY_FIELD_MAP's own parser
	if err := pairs.EnvDecode(fieldMap); err != nil {
		t.Fatal(err)
	}
	streams, err := stream.Apply(stream.FieldMap(pairs))
	if err != nil {
		t.Fatal(err)
	}
	return streams
}

// An interrupted rebuild commits the batch in hand, ends partial, and the
// next one continues after the last committed key: it reads only the rest.
func TestRebuildResumesAfterInterruption(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Variants = []string{sandbox.VariantRenamedFields}
	h := newHarness(t, o, nil)
	if res := h.run(Request{Streams: []string{"projects"}}); res.Status != StatusWarning {
		t.Fatalf("run: %s %v, want warning (the renamed fields are NULL)", res.Status, res.Err)
	}
	projects := h.count(fmt.Sprintf("SELECT count(*) FROM %s", pgx.Identifier{h.schema, "projects"}.Sanitize()))
	filled := fmt.Sprintf("SELECT count(*) FROM %s WHERE name IS NOT NULL AND status IS NOT NULL", pgx.Identifier{h.schema, "projects"}.Sanitize())
	if projects != 12 || h.count(filled) != 0 {
		t.Fatalf("after the run: %d projects, %d named", projects, h.count(filled))
	}
	sent := h.sent.Load()

	eng := h.engine(func(s *Settings) { s.Streams = mappedStreams(t, "projects.name=title,projects.status=state") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := eng.store.(*load.Store)
	eng.store = &cancellingStore{Store: store, after: 2, cancel: cancel}
	res, err := eng.Rebuild(ctx, RebuildRequest{Streams: []string{"projects"}, BatchSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusPartial || !errors.Is(res.Err, ErrInterrupted) || res.Tables["projects"].Read != 10 {
		t.Fatalf("interrupted rebuild: %s %v, %+v", res.Status, res.Err, res.Tables["projects"])
	}
	if n := h.count(filled); n != 10 {
		t.Fatalf("%d projects named after two batches of 5, want 10", n)
	}
	st, err := store.GetState(context.Background(), load.RebuildStream, "projects")
	if err != nil || !strings.Contains(string(st.Cursor), `"after"`) {
		t.Fatalf("cursor after the interruption: %s, %v", st.Cursor, err)
	}
	// status says a rebuild waits to be finished, and how.
	rep, err := eng.Status(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rebuilds) != 1 || rep.Rebuilds[0].Table != "projects" || rep.Rebuilds[0].Stream != "projects" ||
		rep.Rebuilds[0].Stage != RebuildStageRecords || rep.Rebuilds[0].LastProgress.IsZero() {
		t.Fatalf("status after the interruption: rebuilds %+v, want projects waiting at its stored records", rep.Rebuilds)
	}

	eng.store = store
	res, err = eng.Rebuild(context.Background(), RebuildRequest{Streams: []string{"projects"}, BatchSize: 5})
	if err != nil || res.Status != StatusSucceeded {
		t.Fatalf("resumed rebuild: %v %+v", err, res)
	}
	if tb := res.Tables["projects"]; !tb.Resumed || tb.Read != 2 || res.Counts.Tables["projects"].Updated != 2 {
		t.Errorf("resumed rebuild read %+v and wrote %+v, want the last 2 projects", tb, res.Counts.Tables)
	}
	if n := h.count(filled); n != projects {
		t.Errorf("%d of %d projects named after the resumed rebuild", n, projects)
	}
	if _, err := store.GetState(context.Background(), load.RebuildStream, "projects"); !errors.Is(err, load.ErrNoState) {
		t.Errorf("a finished rebuild kept its cursor: %v", err)
	}
	if rep, err := eng.Status(context.Background(), 5); err != nil || len(rep.Rebuilds) != 0 {
		t.Errorf("status after the finished rebuild: rebuilds %+v, %v", rep.Rebuilds, err)
	}
	runs := fmt.Sprintf("SELECT count(*) FROM %s WHERE trigger = 'rebuild' AND requests_used = 0 AND status = $1", pgx.Identifier{h.schema, "sync_runs"}.Sanitize())
	if h.count(runs, "partial") != 1 || h.count(runs, "succeeded") != 1 {
		t.Errorf("sync_runs: %d partial and %d succeeded rebuilds, want 1 and 1", h.count(runs, "partial"), h.count(runs, "succeeded"))
	}
	if h.sent.Load() != sent {
		t.Errorf("the rebuilds sent %d requests", h.sent.Load()-sent)
	}

	// A cursor left under another field map is not followed.
	if err := store.SetState(context.Background(), load.RebuildStream, "", load.Checkpoint{Partition: "projects",
		Cursor: json.RawMessage(`{"mapping":"another","after":["zzz"]}`)}); err != nil {
		t.Fatal(err)
	}
	res, err = eng.Rebuild(context.Background(), RebuildRequest{Streams: []string{"projects"}})
	if err != nil || res.Tables["projects"].Resumed || res.Tables["projects"].Read != int64(projects) {
		t.Errorf("rebuild after a cursor of another map: %+v, %v", res.Tables["projects"], err)
	}
}

// The PHP encoder's false for a missing value sent e-mails to
// rejected_records before the decoders read it as null: a rebuild lands
// them with 0 requests. A reject that still does not fit stays as it was,
// and one whose key is stored does not overwrite the stored row.
func TestRebuildRecoversRejectedRecords(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	ctx := context.Background()
	store := h.eng.store.(*load.Store)
	email := func(id int, subject, lastName string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"email":{"type_id":1,"type_name":"Email","brand_id":"42","project_id":false,`+
			`"subject":%s,"message":false,"has_attachments":0,"size":false,"mailbox_id":"18c2f%d","mailbox_thread":false,`+
			`"email_at":"2024-11-04T08:15:42Z"},"users":{"from":[{"first_name":"Ioana","last_name":%s,"full_name":"Ioana Radu",`+
			`"email":"ioana@client-brand.ro","phone":false,"avatar":false,"status":"Activ"}],`+
			`"to":{"17":{"first_name":"Ștefan","last_name":"Ionescu","full_name":"Ștefan Ionescu","email":"stefan.ionescu@agentie.ro"}},`+
			`"cc":false,"bcc":false}}`, subject, id, lastName))
	}
	// The stored e-mail 2703, landed earlier with its subject.
	comms, _ := stream.Lookup("communications")
	landed := transform.Records(transform.Input{Stream: comms, Endpoint: stream.EndpointCommunications},
		[]stream.Record{{Key: "2703", Raw: email(2703, `"Ofertă (trimisă)"`, `"Radu"`)}})
	if len(landed.Rejects) != 0 {
		t.Fatalf("rejects: %+v", landed.Rejects)
	}
	old := errors.New("users.from[0].last_name: want a string, got false")
	rejects := []transform.Reject{
		transform.NewReject(stream.RejectCommunications, "2701", email(2701, `"Ofertă campanie Crăciun"`, "false"), old),
		transform.NewReject(stream.RejectCommunications, "2702", email(2702, `"Re: Ofertă"`, "false"), old),
		transform.NewReject(stream.RejectCommunications, "2703", email(2703, `"Ofertă (ciornă)"`, "false"), old),
		transform.NewReject(stream.RejectCommunications, "2704", email(2704, "false", "false"), errors.New("subject is missing")),
	}
	landed.Rejects = rejects
	if _, err := store.Commit(ctx, "", &load.RangePage{Batch: landed}); err != nil {
		t.Fatal(err)
	}
	q := func(sql string) string {
		return strings.ReplaceAll(sql, "S.", pgx.Identifier{h.schema}.Sanitize()+".")
	}

	res, err := h.eng.Rebuild(ctx, RebuildRequest{Streams: []string{"communications"}})
	if err != nil || res.Status != StatusSucceeded {
		t.Fatalf("rebuild: %v %+v", err, res)
	}
	if tb := res.Tables["emails"]; tb.Read != 1 || tb.Retried != 4 || tb.Recovered != 2 {
		t.Errorf("emails: %+v, want 1 stored record read, 4 rejects retried, 2 recovered", tb)
	}
	if n := h.count(q(`SELECT count(*) FROM S.emails WHERE record_id IN (2701, 2702) AND project_id IS NULL AND size_bytes IS NULL`)); n != 2 {
		t.Errorf("%d of the 2 recovered e-mails landed", n)
	}
	if n := h.count(q(`SELECT count(*) FROM S.email_recipients WHERE record_id IN (2701, 2702)`)); n != 4 {
		t.Errorf("%d recipients of the recovered e-mails, want 4", n)
	}
	if n := h.count(q(`SELECT count(*) FROM S.users WHERE email = 'ioana@client-brand.ro' AND last_name = 'Radu'`)); n != 1 {
		t.Errorf("the sender lost the last name a landed e-mail gave (%d)", n)
	}
	if n := h.count(q(`SELECT count(*) FROM S.emails WHERE record_id = 2703 AND subject = 'Ofertă (trimisă)'`)); n != 1 {
		t.Error("a reject overwrote the stored e-mail of its key")
	}
	if n := h.count(q(`SELECT count(*) FROM S.rejected_records WHERE record_key IN ('2703', '2704') AND occurrences = 1`)); n != 2 {
		t.Errorf("%d of the rejects left alone are as they were, want 2", n)
	}
	if n := h.count(q(`SELECT count(*) FROM S.rejected_records`)); n != 2 {
		t.Errorf("%d rejects left, want 2", n)
	}
	if h.sent.Load() != 0 {
		t.Errorf("%d requests", h.sent.Load())
	}
}

// A field map that remaps a key column would move stored records to new
// keys, leaving the old rows behind: the rebuild refuses before writing.
func TestRebuildRefusesToMoveKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	h.mustSucceed(Request{Streams: []string{"projects"}}, "run")
	eng := h.engine(func(s *Settings) { s.Streams = mappedStreams(t, "projects.project_id=brand_id") })
	res, err := eng.Rebuild(context.Background(), RebuildRequest{Streams: []string{"projects"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFailed || !errors.Is(res.Err, ErrKeyChanged) || !strings.Contains(res.Err.Error(), "projects") {
		t.Fatalf("rebuild under a key remap: %s %v %+v %+v", res.Status, res.Err, res.Tables["projects"], res.Counts)
	}
	if w := res.Counts.Written(); w != 0 {
		t.Errorf("wrote %d rows", w)
	}
	if n := h.count(fmt.Sprintf("SELECT count(*) FROM %s", pgx.Identifier{h.schema, "projects"}.Sanitize())); n != 12 {
		t.Errorf("%d projects, want the 12 stored", n)
	}
}
