package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/agencysync/agencysync/extract"
)

// BrandListHash is the hash of the fields of a brands-list entry that belong
// to the brand's detail: id, name, status, date_created and account_manager.
// A change in any of them makes the detail (and the contacts) due. The
// aggregates the service recomputes from finance — projects_count and
// financial_summary (total_budget, invoiced, collected, currency) — are stored
// from the list entry and do not count: they change with every finance edit
// and the detail adds nothing to them.
func BrandListHash(b extract.Brand) string {
	kind, id := "brand", string(b.ID)
	return listHash(&kind, &id, &b.Name, &b.Status, hashTime(b.DateCreated), &b.AccountManager)
}

// ProjectListHash is the hash of the fields of a projects-list entry that
// belong to the project's detail: id, brand_id, name, status, start_date,
// deadline, closed_at and updated_at. A change in any of them makes the
// detail due. budget (amount and currency) is the sum of the project's
// budgets, recomputed by finance: it is stored from the list entry and does
// not count.
func ProjectListHash(p extract.Project) string {
	kind, id, brand := "project", string(p.ID), string(p.BrandID)
	return listHash(&kind, &id, &brand, &p.Name, &p.Status,
		hashTime(p.StartDate), hashTime(p.Deadline), hashTime(p.ClosedAt), hashTime(p.UpdatedAt))
}

// hashTime is an optional instant for listHash: RFC 3339 in UTC, or nil.
func hashTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// listHash hashes the values of a list entry unambiguously: each value is
// length-prefixed, an absent one (nil) marked apart from an empty one.
func listHash(values ...*string) string {
	h := sha256.New()
	for _, v := range values {
		if v == nil {
			h.Write([]byte("n"))
			continue
		}
		fmt.Fprintf(h, "s%d:%s", len(*v), *v)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
