package load

import "github.com/agencysync/agencysync/transform"

// Commit is what one transaction commits (Store.Commit): a listing's page
// (ListPage), a listing's end (ListEnd), an entity's detail with its child
// lists (DetailPage), a page of a range (RangePage) or a rebuild's page
// (RebuildPage). Each kind says what it carries; the Store alone writes
// the state of the listings they name.
type Commit interface {
	// Rows are the rows and rejected records the commit carries.
	Rows() *transform.Batch
	// StreamName is the sync_state stream the commit belongs to.
	StreamName() string
	lower() page
}

// ListPage is one page of a listing: its rows and rejects, landed; once it
// is committed, the listing has seen them and the total the service
// announced.
type ListPage struct {
	// Stream is the sync_state stream of the listing.
	Stream string
	// Batch holds the page's rows and rejected records.
	Batch transform.Batch
	// Listing is the listing the page belongs to (nil for a listing that
	// soft-deletes nothing: an incremental one).
	Listing *Listing
	// Total is the total the service announced with the page (0: none).
	Total int
	// State is the listing's checkpoint, committed with the rows.
	State *Checkpoint
	// Listed are the page's entities as listed, for a list whose entities
	// have details or child lists: detail_state records their list hashes
	// under Stream, which decide what is due (see DetailState).
	Listed []ListedEntity
}

// Rows returns the page's batch.
func (c *ListPage) Rows() *transform.Batch { return &c.Batch }

// StreamName returns the page's stream.
func (c *ListPage) StreamName() string { return c.Stream }

func (c *ListPage) lower() page {
	return page{stream: c.Stream, batch: c.Batch, sees: c.Listing, total: c.Total, state: c.State, listed: c.Listed}
}

// ListEnd ends a listing with no extra row: when the listing was proven
// complete (Listing set), the rows of its table it did not see get
// _deleted_at (see MarkDeleted) and, for a list whose entities have
// details, the entities soft-deleted stop being listed (Unlisted); its
// checkpoint in any case.
type ListEnd struct {
	// Stream is the sync_state stream of the listing.
	Stream string
	// Listing is the listing ended; nil when it was not proven complete
	// (nothing is soft-deleted).
	Listing *Listing
	// State is the listing's last checkpoint.
	State *Checkpoint
	// Unlisted, when set, names the tables of the entities the listing
	// covers (see Unlisted).
	Unlisted *Unlisted
}

// Rows returns no rows: the end carries none.
func (c *ListEnd) Rows() *transform.Batch { return &transform.Batch{} }

// StreamName returns the listing's stream.
func (c *ListEnd) StreamName() string { return c.Stream }

func (c *ListEnd) lower() page {
	p := page{stream: c.Stream, state: c.State, unlisted: c.Unlisted}
	if c.Listing != nil {
		p.ends = []*Listing{c.Listing}
	}
	return p
}

// Unlisted names, for the end of an entity list, the table of the
// entities, whose soft-deleted rows stop being listed in detail_state (their
// details are no longer fetched), and the tables of their child lists,
// whose rows of soft-deleted entities are soft-deleted with them (they come
// back with the entity's next detail).
type Unlisted struct {
	// Table is the entities' table; its first key column is their id.
	Table string
	// Children are the tables of the lists asked per entity; the column
	// that takes the entity's id (stream.Table.ParamColumn) holds it.
	Children []string
}

// DetailPage is an entity's detail and its child lists, fetched when the
// entity was due.
type DetailPage struct {
	// Stream is the sync_state stream (and detail_state stream) of the
	// entity.
	Stream string
	// Batch holds the detail's rows and its child lists' rows and rejects.
	Batch transform.Batch
	// Table is the table of the entities: the detail's rows of it resolve
	// the detail's rejects (stream.Table.DetailReject).
	Table string
	// Fetched, when set, records the detail as fetched with its list hash;
	// nil when it was not (it answered 404 while its child lists were
	// served): it is due again.
	Fetched *FetchedDetail
	// Children are the child listings proven complete: each is ended in the
	// page's transaction, its unseen rows soft-deleted.
	Children []*Listing
	// State is the details' checkpoint.
	State *Checkpoint
}

// Rows returns the page's batch.
func (c *DetailPage) Rows() *transform.Batch { return &c.Batch }

// StreamName returns the entity's stream.
func (c *DetailPage) StreamName() string { return c.Stream }

func (c *DetailPage) lower() page {
	return page{stream: c.Stream, batch: c.Batch, detailTable: c.Table, fetched: c.Fetched, ends: c.Children, state: c.State}
}

// RangePage is a page of a range of records the stream pages by itself
// (the e-mails of a date window), with the range's checkpoint (nil: none).
type RangePage struct {
	Stream string
	Batch  transform.Batch
	State  *Checkpoint
}

// Rows returns the page's batch.
func (c *RangePage) Rows() *transform.Batch { return &c.Batch }

// StreamName returns the page's stream.
func (c *RangePage) StreamName() string { return c.Stream }

func (c *RangePage) lower() page { return page{stream: c.Stream, batch: c.Batch, state: c.State} }

// RebuildPage is a page of a rebuild: stored records re-derived under the
// current declarations, with the rebuild's cursor. Its rows resolve no
// rejected record (they are no newer than one).
type RebuildPage struct {
	Batch transform.Batch
	// State is the rebuild's cursor (stream RebuildStream).
	State *Checkpoint
	// Rekeyed are the list hashes of the entities of RekeyStream the page
	// re-derived: a detail current under the old hash stays current.
	Rekeyed     []ListedEntity
	RekeyStream string
}

// Rows returns the page's batch.
func (c *RebuildPage) Rows() *transform.Batch { return &c.Batch }

// StreamName returns RebuildStream.
func (c *RebuildPage) StreamName() string { return RebuildStream }

func (c *RebuildPage) lower() page {
	return page{stream: RebuildStream, batch: c.Batch, state: c.State, rekeyed: c.Rekeyed, rekeyStream: c.RekeyStream, keepRejects: true}
}
