package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agencysync/agencysync/extract"
)

// Projects turns projects of the list into projects rows only: the list may
// omit team, deliverables and history, so the stored ones are left alone.
func Projects(list []extract.Project) Batch { return projects(list, false) }

// ProjectDetails turns project details into projects rows with their team
// members, deliverables and history entries. Team and deliverables are complete:
// each project's id goes into Batch.ProjectDetails, so the loader deletes
// stored members and deliverables the detail no longer lists. History is a
// log: entries are added or corrected, never deleted, so an API that returns
// only recent history does not erase the past. The detail as received goes
// to DetailRaw; Raw stays nil, so the list's record stays in projects.raw and
// the two do not overwrite each other on every sync.
//
// A detail whose team member lacks user_id, whose deliverable lacks id, or
// whose history entry lacks at or field is rejected whole.
func ProjectDetails(list []extract.Project) Batch { return projects(list, true) }

type projectRows struct {
	project      Project
	team         []ProjectTeamMember
	deliverables []ProjectDeliverable
	history      []ProjectHistoryEntry
}

func projects(list []extract.Project, detail bool) Batch {
	var out Batch
	var rows dedup[string, projectRows] // a repeated project: the last one wins
	for _, p := range list {
		r, err := projectOf(p, detail)
		if err != nil {
			out.Rejects = append(out.Rejects, NewReject(StreamProjects, string(p.ID), p.Raw, err))
			continue
		}
		rows.put(r.project.ProjectID, r)
	}
	for _, r := range rows.rows {
		out.Projects = append(out.Projects, r.project)
		if detail {
			out.ProjectDetails = append(out.ProjectDetails, r.project.ProjectID)
			out.ProjectTeamMembers = append(out.ProjectTeamMembers, r.team...)
			out.ProjectDeliverables = append(out.ProjectDeliverables, r.deliverables...)
			out.ProjectHistory = append(out.ProjectHistory, r.history...)
		}
	}
	return out
}

func projectOf(p extract.Project, detail bool) (projectRows, error) {
	if p.ID == "" {
		return projectRows{}, errors.New("project without id")
	}
	if err := keyLengths("id", string(p.ID), "brand_id", string(p.BrandID)); err != nil {
		return projectRows{}, err
	}
	id := cleanText(string(p.ID))
	r := projectRows{project: Project{
		ProjectID: id,
		BrandID:   optID(p.BrandID),
		Name:      optText(p.Name),
		Status:    optText(p.Status),
		StartDate: optDate(p.StartDate),
		Deadline:  optDate(p.Deadline),
		ClosedAt:  optInstant(p.ClosedAt),
		UpdatedAt: optInstant(p.UpdatedAt),
	}}
	if detail {
		r.project.DetailRaw = recordJSON(p.Raw)
	} else {
		r.project.Raw = recordJSON(p.Raw)
	}
	if p.Budget != nil {
		amount, err := decimal("budget.amount", p.Budget.Amount)
		if err != nil {
			return projectRows{}, err
		}
		r.project.BudgetAmount = amount
		r.project.BudgetCurrency = optText(p.Budget.Currency)
	}
	if !detail {
		return r, nil
	}

	var team dedup[string, ProjectTeamMember]
	for i, m := range p.Team {
		if m.UserID == "" {
			return projectRows{}, fmt.Errorf("team member %d without user_id", i)
		}
		if err := keyLengths(fmt.Sprintf("team member %d user_id", i), string(m.UserID)); err != nil {
			return projectRows{}, err
		}
		row := ProjectTeamMember{
			ProjectID: id,
			UserID:    cleanText(string(m.UserID)),
			FullName:  optTrim(m.FullName),
			Role:      optTrim(m.Role),
		}
		if n, err := strconv.ParseInt(row.UserID, 10, 64); err == nil {
			row.PlatformUserID = &n
		}
		team.put(row.UserID, row)
	}
	r.team = team.rows

	var deliverables dedup[string, ProjectDeliverable]
	for i, d := range p.Deliverables {
		if d.ID == "" {
			return projectRows{}, fmt.Errorf("deliverable %d without id", i)
		}
		if err := keyLengths(fmt.Sprintf("deliverable %d id", i), string(d.ID)); err != nil {
			return projectRows{}, err
		}
		row := ProjectDeliverable{
			ProjectID:     id,
			DeliverableID: cleanText(string(d.ID)),
			Name:          optText(d.Name),
			DueDate:       optDate(d.DueDate),
			Status:        optText(d.Status),
			DeliveredAt:   optInstant(d.DeliveredAt),
		}
		deliverables.put(row.DeliverableID, row)
	}
	r.deliverables = deliverables.rows

	type atField struct {
		at    time.Time
		field string
	}
	seq := make(map[atField]int32, len(p.History))
	for i, h := range p.History {
		if h.At.IsZero() {
			return projectRows{}, fmt.Errorf("history entry %d without at", i)
		}
		if h.Field == "" {
			return projectRows{}, fmt.Errorf("history entry %d without field", i)
		}
		if err := keyLengths(fmt.Sprintf("history entry %d field", i), h.Field); err != nil {
			return projectRows{}, err
		}
		k := atField{instant(h.At), cleanText(h.Field)}
		seq[k]++
		r.history = append(r.history, ProjectHistoryEntry{
			ProjectID: id,
			At:        k.at,
			Field:     k.field,
			Seq:       seq[k],
			FromValue: optPtr(h.From),
			ToValue:   optPtr(h.To),
			ByUserID:  optID(h.ByUserID),
		})
	}
	return r, nil
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
