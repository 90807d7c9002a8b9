package engine

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// runStats gathers, per task of a run, what sync_runs.streams_detail keeps:
// requests spent, records read, duration and the date ranges the mail
// hooks fetched. Tasks run one after the other; pages commit inside their task.
type runStats struct {
	mu      sync.Mutex
	cur     Task
	started time.Time
	spent0  int
	tasks   map[Task]*load.TaskDetail
}

// begin starts task t of stream (the stream(s) it belongs to); spent is
// the run's requests so far.
func (s *runStats) begin(t Task, stream string, spent int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks == nil {
		s.tasks = map[Task]*load.TaskDetail{}
	}
	if s.tasks[t] == nil {
		s.tasks[t] = &load.TaskDetail{Stream: stream}
	}
	s.cur, s.started, s.spent0 = t, now, spent
}

// end closes the current task; spent is the run's requests so far.
func (s *runStats) end(spent int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.tasks[s.cur]
	if d == nil {
		return
	}
	d.Requests += spent - s.spent0
	d.DurationSeconds += now.Sub(s.started).Seconds()
	s.cur = ""
}

// read adds a committed page's records to the current task.
func (s *runStats) read(b *transform.Batch) {
	n := pageRecords(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.tasks[s.cur]; d != nil {
		d.RecordsRead += n
	}
}

// rangePage records a committed page of the mail hooks' range from..to
// carrying records records; last says it was the range's last page.
func (s *runStats) rangePage(from, to string, records int64, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.tasks[s.cur]
	if d == nil {
		return
	}
	n := len(d.Ranges)
	if n == 0 || d.Ranges[n-1].From != from || d.Ranges[n-1].To != to || d.Ranges[n-1].Complete {
		d.Ranges = append(d.Ranges, load.RangeFetched{From: from, To: to})
		n++
	}
	rg := &d.Ranges[n-1]
	rg.Pages++
	rg.Records += records
	rg.Complete = last
}

// changed adds rows a task wrote (inserted, updated, soft-deleted) to the
// current task, by table.
func (s *runStats) changed(c load.Counts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.tasks[s.cur]
	if d == nil {
		return
	}
	for table, n := range c.RowsByTable() {
		if n == 0 {
			continue
		}
		if d.Changed == nil {
			d.Changed = map[string]int64{}
		}
		d.Changed[table] += n
	}
}

// detail returns the gathered figures by task name.
func (s *runStats) detail() map[string]load.TaskDetail {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]load.TaskDetail, len(s.tasks))
	for t, d := range s.tasks {
		c := *d
		c.Ranges = append([]load.RangeFetched(nil), d.Ranges...)
		c.Changed = maps.Clone(d.Changed)
		out[string(t)] = c
	}
	return out
}

// pageRecords is the number of service records a page carries: the listed
// or detailed entities, the records of child lists, e-mails, and the
// rejected records.
func pageRecords(b *transform.Batch) int64 { return int64(b.Records()) }

// fieldWatch gathers what a run's records say about the service's shapes:
// the field inventory of each record's raw JSON, noted where
// records are transformed (sampled, see inventory.Observer), and per
// inventory stream the records committed, the rows and NULLs of each mapped
// column (transform.Coverage) and the rejects by reason class, counted from
// each committed page (so that records that fail to decode count too). At the
// end of the run, finishFields turns it into source_fields rows and coverage
// warnings. It is safe for concurrent use: details are transformed by the
// goroutines that fetch them.
type fieldWatch struct {
	mu      sync.Mutex
	decls   []*stream.Stream
	inv     *inventory.Inventory
	streams map[string]*watchedStream
	// again: the current task re-reads records the run already counted
	// (the verification of days synced earlier in the run): not counted twice.
	again bool
	took  time.Duration // time spent observing and counting
}

// watchedStream is what a run received of one inventory stream: the records
// of one endpoint.
type watchedStream struct {
	decl     *stream.Stream
	endpoint string
	records  int64
	rows     map[string]int64 // by table
	nulls    map[string]int64 // by "table.column"
	rejects  map[string]int64 // by inventory.ReasonClass
}

func newFieldWatch(decls []*stream.Stream, sampling *[2]int) *fieldWatch {
	inv := inventory.New()
	if sampling != nil {
		inv.SetSampling(sampling[0], sampling[1])
	}
	return &fieldWatch{decls: decls, inv: inv, streams: map[string]*watchedStream{}}
}

// inventory names the records of endpoint in the field inventory
// (source_fields.stream, sync_runs.warnings[].stream): its declared
// stream.Endpoint.InventoryName.
func (w *fieldWatch) inventory(endpoint string) string {
	for _, s := range w.decls {
		if ep, ok := s.Endpoint(endpoint); ok {
			return ep.InventoryName()
		}
	}
	return endpoint
}

// recordTable is the table of whole records that an endpoint's records fill
// (its wrapper is the records' wrapper); nil when none.
func recordTable(decl *stream.Stream, endpoint string) *stream.Table {
	return decl.RecordTable(endpoint)
}

// task tells the watch which task comes: a task that re-reads records the
// run may have read already (rereads, its records named as names in the
// inventory) neither observes nor counts them again once the run counted
// any.
func (w *fieldWatch) task(rereads bool, names []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.again = false
	for _, name := range names {
		if c := w.streams[name]; rereads && c != nil && c.records > 0 {
			w.again = true
		}
	}
}

// rereads says whether the records from now on are re-reads of records the
// run counted already (the reconciliation of the ranges a task closed).
func (w *fieldWatch) rereads(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.again = on
}

// observe notes the fields of the records of one endpoint of decl, given as
// the views their transform read them through (transform.Input.Read): a
// record is parsed once whether the inventory samples it or not.
func (w *fieldWatch) observe(decl *stream.Stream, endpoint string, views []*stream.View) {
	if w == nil || decl == nil {
		return
	}
	start := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.again {
		return
	}
	obs := w.inv.Observer(w.inventory(endpoint))
	for _, v := range views {
		obs.ObserveMembers(v.Members)
	}
	w.took += time.Since(start)
}

// endpointOf returns the declaration and the endpoint whose records fill
// table name on a committed page (detail: the page carries an entity's
// detail, whose own table may also be filled by its list).
func (w *fieldWatch) endpointOf(name string, detail bool) (*stream.Stream, string) {
	for _, s := range w.decls {
		t, ok := s.Table(name)
		if !ok {
			continue
		}
		eps := t.Endpoints
		if len(eps) == 0 {
			for _, e := range s.Endpoints {
				eps = append(eps, e.Name)
			}
		}
		pick := ""
		for _, e := range eps {
			ep, _ := s.Endpoint(e)
			if (ep.Paging == stream.PagingDetail) == detail {
				return s, e
			}
			if pick == "" {
				pick = e
			}
		}
		return s, pick
	}
	return nil, ""
}

// rejectTable is the table whose records are rejected under reject stream rs.
func (w *fieldWatch) rejectTable(rs string) string {
	for _, s := range w.decls {
		for _, t := range s.Tables() {
			if t.Reject == rs || t.DetailReject == rs {
				return t.Name
			}
		}
	}
	return ""
}

// stream returns the watched stream of endpoint of decl.
func (w *fieldWatch) stream(decl *stream.Stream, endpoint string) *watchedStream {
	name := w.inventory(endpoint)
	ws := w.streams[name]
	if ws == nil {
		ws = &watchedStream{decl: decl, endpoint: endpoint, rows: map[string]int64{}, nulls: map[string]int64{},
			rejects: map[string]int64{}}
		w.streams[name] = ws
	}
	return ws
}

// count adds a committed page's batch b to the streams its tables and
// rejects belong to (detail: the page carries an entity's detail): its
// records (rows of whole-record tables, and rejects), the rows and NULLs of
// its tables, its rejects by reason.
func (w *fieldWatch) count(b *transform.Batch, detail bool) {
	if w == nil {
		return
	}
	start := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.again {
		return
	}
	for name, tr := range b.Tables {
		decl, ep := w.endpointOf(name, detail)
		if decl == nil {
			continue
		}
		ws := w.stream(decl, ep)
		if tr.Table.Parent == "" && tr.Table.Elements == nil {
			ws.records += int64(len(tr.Rows))
		}
	}
	for table, n := range b.Coverage.Rows {
		if decl, ep := w.endpointOf(table, detail); decl != nil {
			w.stream(decl, ep).rows[table] += int64(n)
		}
	}
	for col, n := range b.Coverage.Nulls {
		table, _, _ := strings.Cut(col, ".")
		if decl, ep := w.endpointOf(table, detail); decl != nil {
			w.stream(decl, ep).nulls[col] += int64(n)
		}
	}
	for i := range b.Rejects {
		rj := &b.Rejects[i]
		decl, ep := w.endpointOf(w.rejectTable(rj.Stream), detail)
		if decl == nil {
			continue
		}
		ws := w.stream(decl, ep)
		ws.records++
		ws.rejects[inventory.ReasonClass(rj.Error)]++
	}
	w.took += time.Since(start)
}

// fieldPaths returns the inventory paths of a column's source field path f
// in table t: f for a table of whole records, the path under the array of a
// child table, or under each collection an Elements function reads.
func fieldPaths(t *stream.Table, f string) []string {
	switch {
	case t.Array != "":
		return []string{inventory.FieldPath(t.Array, f)}
	case len(t.Sources) > 0:
		out := make([]string, 0, 2*len(t.Sources))
		for _, src := range t.Sources {
			out = append(out, inventory.FieldPath(src, f), src+"."+f)
		}
		return out
	}
	return []string{f}
}

// mapping returns, for a stream's records of endpoint, the column each
// source field path fills (Field and Alternates of every mapped column of
// the tables the endpoint fills), and the columns whose coverage the run
// counted. Without any record observed (every page came from the spool,
// transformed before a crash), a sparse column cannot be told from a
// renamed one (its field's presence is unknown): it is left out.
func (ws *watchedStream) mapping(observed bool) (map[string]string, []inventory.Column) {
	paths := map[string]string{}
	var cols []inventory.Column
	rec := recordTable(ws.decl, ws.endpoint)
	for _, t := range ws.decl.Tables() {
		if !t.FillsFrom(ws.endpoint) {
			continue
		}
		for i := range t.Columns {
			c := &t.Columns[i]
			if !c.Mapped() || !c.FillsFrom(ws.endpoint) {
				continue
			}
			name := t.Name + "." + c.Name
			main := fieldPaths(t, c.Field)
			for _, f := range append([]string{c.Field}, c.Alternates...) {
				for _, p := range fieldPaths(t, f) {
					if _, ok := paths[p]; !ok {
						paths[p] = name
					}
				}
			}
			if c.Type == stream.Boolean || c.Sparse && !observed { // false is a value and a PHP null: not counted
				continue
			}
			col := inventory.Column{Column: name, Field: main[0], Types: inventory.TypesFor(c.Type.SQL()),
				Null: ws.nulls[name], Sparse: c.Sparse}
			if rows := ws.rows[t.Name]; t != rec || rows != ws.records {
				col.Rows = rows
			}
			if col.Rows > 0 || t == rec {
				cols = append(cols, col)
			}
		}
	}
	return paths, cols
}

// result returns the run's field inventory under the run's mapping and the
// coverage of each stream, for inventory.Coverage.
func (w *fieldWatch) result() (fields []inventory.Field, runs []inventory.StreamRun, streams []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := inventory.Mapping{}
	for name, ws := range w.streams {
		paths, cols := ws.mapping(w.inv.Records(name) > 0)
		m[name] = paths
		runs = append(runs, inventory.StreamRun{Stream: name, Records: ws.records, Observed: w.inv.Records(name),
			Columns: cols, Rejects: ws.rejects})
		streams = append(streams, name)
	}
	slices.Sort(streams)
	slices.SortFunc(runs, func(a, b inventory.StreamRun) int { return strings.Compare(a.Stream, b.Stream) })
	return w.inv.Fields(m), runs, streams
}
