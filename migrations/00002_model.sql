-- The warehouse model of shared/design/warehouse-contract.md: brands, projects,
-- finance and communications, plus the starting views. Table and column names
-- are the product's public interface.
--
-- Conventions: brand, project and finance identifiers are text ("42" and 42 are
-- one id); communication record ids and platform user ids are bigint; money is
-- numeric beside its currency; dates are date, instants timestamptz. Every row
-- has _synced_at (when its content last changed here; an unchanged re-sync does
-- not move it); tables whose source can delete have _deleted_at (soft delete,
-- never a hard one); tables holding an API record have raw (the record as
-- received). Keys are enforced by primary keys; references between tables
-- (emails.brand_id → brands, …) are not foreign keys, because the source may
-- mention an entity before, or without, listing it.
--
-- Every statement is unqualified: the migration runner sets search_path to the
-- warehouse schema. Views bind their tables when created, so they keep working
-- under any search_path.

-- +goose Up

-- Brands -------------------------------------------------------------------

CREATE TABLE brands (
    brand_id        text        PRIMARY KEY,
    name            text,
    status          text,
    date_created    date,
    account_manager text,
    projects_count  bigint      CHECK (projects_count >= 0),
    total_budget    numeric,
    invoiced        numeric,
    collected       numeric,
    currency        text,
    general_info    jsonb,
    metadata        jsonb,
    raw             jsonb       NOT NULL,
    detail_raw      jsonb,
    _synced_at      timestamptz NOT NULL DEFAULT now(),
    _deleted_at     timestamptz
);

COMMENT ON TABLE  brands IS 'Brands the agency manages (GET /v1/brands and /v1/brands/{id}), financial_summary flattened.';
COMMENT ON COLUMN brands.brand_id IS 'Brand identifier, as text (also the number in the platform''s brand addresses).';
COMMENT ON COLUMN brands.name IS 'Brand name.';
COMMENT ON COLUMN brands.status IS 'Brand status as the platform says it (a value meaning active is used).';
COMMENT ON COLUMN brands.date_created IS 'When the brand was created on the platform.';
COMMENT ON COLUMN brands.account_manager IS 'Name of the agency''s account manager for the brand.';
COMMENT ON COLUMN brands.projects_count IS 'Number of projects of the brand, as the platform counts them.';
COMMENT ON COLUMN brands.total_budget IS 'financial_summary.total_budget: total budget of the brand, in currency.';
COMMENT ON COLUMN brands.invoiced IS 'financial_summary.invoiced: amount invoiced to the brand, in currency.';
COMMENT ON COLUMN brands.collected IS 'financial_summary.collected: amount collected from the brand, in currency.';
COMMENT ON COLUMN brands.currency IS 'financial_summary.currency: currency code of the financial summary.';
COMMENT ON COLUMN brands.general_info IS 'general_info object of the brand detail, as received; NULL until the detail was read (a list-only sync keeps it).';
COMMENT ON COLUMN brands.metadata IS 'metadata object of the brand detail, as received; NULL until the detail was read (a list-only sync keeps it).';
COMMENT ON COLUMN brands.raw IS 'The brand record exactly as received in the brands list (the detail, for a brand never listed).';
COMMENT ON COLUMN brands.detail_raw IS 'The brand detail (brand_info, general_info, metadata) exactly as received; NULL until the detail was read.';
COMMENT ON COLUMN brands._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN brands._deleted_at IS 'Set when a complete brands listing no longer contained the brand; cleared when it comes back.';

CREATE TABLE brand_financial_snapshots (
    brand_id      text        NOT NULL,
    snapshot_date date        NOT NULL,
    total_budget  numeric,
    invoiced      numeric,
    collected     numeric,
    currency      text,
    _synced_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (brand_id, snapshot_date)
);
CREATE INDEX brand_financial_snapshots_date_idx ON brand_financial_snapshots (snapshot_date);

COMMENT ON TABLE  brand_financial_snapshots IS 'A brand''s financial summary as seen on each day it was synced: trend lines over time (the last sync of a day wins).';
COMMENT ON COLUMN brand_financial_snapshots.brand_id IS 'The brand (brands.brand_id).';
COMMENT ON COLUMN brand_financial_snapshots.snapshot_date IS 'Day the summary was seen.';
COMMENT ON COLUMN brand_financial_snapshots.total_budget IS 'Total budget of the brand that day, in currency.';
COMMENT ON COLUMN brand_financial_snapshots.invoiced IS 'Amount invoiced to the brand as of that day, in currency.';
COMMENT ON COLUMN brand_financial_snapshots.collected IS 'Amount collected from the brand as of that day, in currency.';
COMMENT ON COLUMN brand_financial_snapshots.currency IS 'Currency code of the amounts.';
COMMENT ON COLUMN brand_financial_snapshots._synced_at IS 'When this row last changed in the warehouse.';

CREATE TABLE brand_contacts (
    brand_id    text        NOT NULL,
    contact_id  text        NOT NULL,
    first_name  text,
    last_name   text,
    full_name   text,
    email       text,
    phone       text,
    position    text,
    is_primary  boolean     NOT NULL DEFAULT false,
    raw         jsonb       NOT NULL,
    _synced_at  timestamptz NOT NULL DEFAULT now(),
    _deleted_at timestamptz,
    PRIMARY KEY (brand_id, contact_id)
);
CREATE INDEX brand_contacts_email_idx ON brand_contacts (lower(email));

COMMENT ON TABLE  brand_contacts IS 'Contact persons of a brand ("Get Person Contact Brand").';
COMMENT ON COLUMN brand_contacts.brand_id IS 'The brand (brands.brand_id).';
COMMENT ON COLUMN brand_contacts.contact_id IS 'Contact identifier, as text.';
COMMENT ON COLUMN brand_contacts.first_name IS 'First name, trimmed.';
COMMENT ON COLUMN brand_contacts.last_name IS 'Last name, trimmed; NULL when absent.';
COMMENT ON COLUMN brand_contacts.full_name IS 'Full name, trimmed.';
COMMENT ON COLUMN brand_contacts.email IS 'E-mail address, trimmed (lower(email) is indexed to join users.user_key).';
COMMENT ON COLUMN brand_contacts.phone IS 'Phone number; NULL when absent or empty.';
COMMENT ON COLUMN brand_contacts.position IS 'Position of the person at the brand.';
COMMENT ON COLUMN brand_contacts.is_primary IS 'Whether this is the brand''s primary contact.';
COMMENT ON COLUMN brand_contacts.raw IS 'The contact record exactly as received.';
COMMENT ON COLUMN brand_contacts._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN brand_contacts._deleted_at IS 'Set when the brand''s complete contact listing no longer contained the person; cleared when they come back.';

-- Projects -----------------------------------------------------------------

CREATE TABLE projects (
    project_id      text        PRIMARY KEY,
    brand_id        text,
    name            text,
    status          text,
    start_date      date,
    deadline        date,
    closed_at       timestamptz,
    updated_at      timestamptz,
    budget_amount   numeric,
    budget_currency text,
    raw             jsonb       NOT NULL,
    detail_raw      jsonb,
    _synced_at      timestamptz NOT NULL DEFAULT now(),
    _deleted_at     timestamptz
);
CREATE INDEX projects_brand_id_idx ON projects (brand_id);
CREATE INDEX projects_deadline_idx ON projects (deadline);

COMMENT ON TABLE  projects IS 'Projects of the agency (GET /v1/projects and /v1/projects/{id}).';
COMMENT ON COLUMN projects.project_id IS 'Project identifier, as text (also the number in the platform''s project addresses).';
COMMENT ON COLUMN projects.brand_id IS 'The project''s brand (brands.brand_id).';
COMMENT ON COLUMN projects.name IS 'Project name.';
COMMENT ON COLUMN projects.status IS 'Project status as the platform says it.';
COMMENT ON COLUMN projects.start_date IS 'Day the project starts.';
COMMENT ON COLUMN projects.deadline IS 'Day the project is due.';
COMMENT ON COLUMN projects.closed_at IS 'When the project was closed; NULL while open.';
COMMENT ON COLUMN projects.updated_at IS 'When the platform last changed the project.';
COMMENT ON COLUMN projects.budget_amount IS 'Budget of the project, in budget_currency.';
COMMENT ON COLUMN projects.budget_currency IS 'Currency code of budget_amount.';
COMMENT ON COLUMN projects.raw IS 'The project record exactly as received in the projects list (the detail, for a project never listed).';
COMMENT ON COLUMN projects.detail_raw IS 'The project detail (with team, deliverables and history) exactly as received; NULL until the detail was read.';
COMMENT ON COLUMN projects._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN projects._deleted_at IS 'Set when a complete projects listing no longer contained the project; cleared when it comes back.';

CREATE TABLE project_team_members (
    project_id       text        NOT NULL,
    user_id          text        NOT NULL,
    platform_user_id bigint,
    full_name        text,
    role             text,
    _synced_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_team_members_platform_user_id_idx ON project_team_members (platform_user_id);

COMMENT ON TABLE  project_team_members IS 'Who works on a project, with role; replaced exactly each time the project''s detail is synced.';
COMMENT ON COLUMN project_team_members.project_id IS 'The project (projects.project_id).';
COMMENT ON COLUMN project_team_members.user_id IS 'The team member''s user id, as text.';
COMMENT ON COLUMN project_team_members.platform_user_id IS 'user_id as a number when it is one, to join users.platform_user_id.';
COMMENT ON COLUMN project_team_members.full_name IS 'Full name of the member, trimmed.';
COMMENT ON COLUMN project_team_members.role IS 'Role of the member in the project.';
COMMENT ON COLUMN project_team_members._synced_at IS 'When this row last changed in the warehouse.';

CREATE TABLE project_deliverables (
    project_id     text        NOT NULL,
    deliverable_id text        NOT NULL,
    name           text,
    due_date       date,
    status         text,
    delivered_at   timestamptz,
    _synced_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, deliverable_id)
);
CREATE INDEX project_deliverables_due_date_idx ON project_deliverables (due_date);

COMMENT ON TABLE  project_deliverables IS 'Deliverables of a project; replaced exactly each time the project''s detail is synced.';
COMMENT ON COLUMN project_deliverables.project_id IS 'The project (projects.project_id).';
COMMENT ON COLUMN project_deliverables.deliverable_id IS 'Deliverable identifier, as text.';
COMMENT ON COLUMN project_deliverables.name IS 'Deliverable name.';
COMMENT ON COLUMN project_deliverables.due_date IS 'Day the deliverable is due.';
COMMENT ON COLUMN project_deliverables.status IS 'Deliverable status as the platform says it.';
COMMENT ON COLUMN project_deliverables.delivered_at IS 'When it was delivered; NULL while open.';
COMMENT ON COLUMN project_deliverables._synced_at IS 'When this row last changed in the warehouse.';

CREATE TABLE project_history (
    project_id text        NOT NULL,
    at         timestamptz NOT NULL,
    field      text        NOT NULL,
    seq        integer     NOT NULL CHECK (seq >= 1),
    from_value text,
    to_value   text,
    by_user_id text,
    _synced_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, at, field, seq)
);
CREATE INDEX project_history_at_idx ON project_history (at);

COMMENT ON TABLE  project_history IS 'Status and field changes of projects over time, from the project detail. A log: entries are added or corrected, never deleted.';
COMMENT ON COLUMN project_history.project_id IS 'The project (projects.project_id).';
COMMENT ON COLUMN project_history.at IS 'When the change happened.';
COMMENT ON COLUMN project_history.field IS 'The field that changed, e.g. status.';
COMMENT ON COLUMN project_history.seq IS 'Tiebreak among changes of one field at the same instant: 1, 2, … in the order received.';
COMMENT ON COLUMN project_history.from_value IS 'Value before the change, as text; NULL for null.';
COMMENT ON COLUMN project_history.to_value IS 'Value after the change, as text; NULL for null.';
COMMENT ON COLUMN project_history.by_user_id IS 'User id of who made the change, as text.';
COMMENT ON COLUMN project_history._synced_at IS 'When this row last changed in the warehouse.';

-- Finance ------------------------------------------------------------------

CREATE TABLE budgets (
    budget_id    text        PRIMARY KEY,
    project_id   text,
    brand_id     text,
    amount       numeric,
    currency     text,
    period_start date,
    period_end   date,
    updated_at   timestamptz,
    raw          jsonb       NOT NULL,
    _synced_at   timestamptz NOT NULL DEFAULT now(),
    _deleted_at  timestamptz
);
CREATE INDEX budgets_project_id_idx ON budgets (project_id);
CREATE INDEX budgets_brand_id_idx ON budgets (brand_id);

COMMENT ON TABLE  budgets IS 'Budgets (GET /v1/finance/budgets).';
COMMENT ON COLUMN budgets.budget_id IS 'Budget identifier, as text.';
COMMENT ON COLUMN budgets.project_id IS 'The budget''s project (projects.project_id).';
COMMENT ON COLUMN budgets.brand_id IS 'The budget''s brand (brands.brand_id).';
COMMENT ON COLUMN budgets.amount IS 'Budgeted amount, exact, in currency.';
COMMENT ON COLUMN budgets.currency IS 'Currency code of amount.';
COMMENT ON COLUMN budgets.period_start IS 'First day the budget covers.';
COMMENT ON COLUMN budgets.period_end IS 'Last day the budget covers.';
COMMENT ON COLUMN budgets.updated_at IS 'When the platform last changed the budget.';
COMMENT ON COLUMN budgets.raw IS 'The budget record exactly as received.';
COMMENT ON COLUMN budgets._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN budgets._deleted_at IS 'Set when a complete budgets listing no longer contained the record; cleared when it comes back.';

CREATE TABLE invoices (
    invoice_id  text        PRIMARY KEY,
    number      text,
    project_id  text,
    brand_id    text,
    issue_date  date,
    due_date    date,
    amount      numeric,
    currency    text,
    status      text,
    updated_at  timestamptz,
    raw         jsonb       NOT NULL,
    _synced_at  timestamptz NOT NULL DEFAULT now(),
    _deleted_at timestamptz
);
CREATE INDEX invoices_project_id_idx ON invoices (project_id);
CREATE INDEX invoices_brand_id_idx ON invoices (brand_id);
CREATE INDEX invoices_issue_date_idx ON invoices (issue_date);

COMMENT ON TABLE  invoices IS 'Invoices (GET /v1/finance/invoices).';
COMMENT ON COLUMN invoices.invoice_id IS 'Invoice identifier, as text.';
COMMENT ON COLUMN invoices.number IS 'Invoice number as printed.';
COMMENT ON COLUMN invoices.project_id IS 'The invoice''s project (projects.project_id).';
COMMENT ON COLUMN invoices.brand_id IS 'The invoiced brand (brands.brand_id).';
COMMENT ON COLUMN invoices.issue_date IS 'Day the invoice was issued.';
COMMENT ON COLUMN invoices.due_date IS 'Day payment is due.';
COMMENT ON COLUMN invoices.amount IS 'Invoiced amount, exact, in currency.';
COMMENT ON COLUMN invoices.currency IS 'Currency code of amount.';
COMMENT ON COLUMN invoices.status IS 'Invoice status as the platform says it.';
COMMENT ON COLUMN invoices.updated_at IS 'When the platform last changed the invoice.';
COMMENT ON COLUMN invoices.raw IS 'The invoice record exactly as received.';
COMMENT ON COLUMN invoices._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN invoices._deleted_at IS 'Set when a complete invoices listing no longer contained the record; cleared when it comes back.';

CREATE TABLE collections (
    collection_id text        PRIMARY KEY,
    invoice_id    text,
    collected_on  date,
    amount        numeric,
    currency      text,
    updated_at    timestamptz,
    raw           jsonb       NOT NULL,
    _synced_at    timestamptz NOT NULL DEFAULT now(),
    _deleted_at   timestamptz
);
CREATE INDEX collections_invoice_id_idx ON collections (invoice_id);

COMMENT ON TABLE  collections IS 'Money collected against invoices (GET /v1/finance/collections).';
COMMENT ON COLUMN collections.collection_id IS 'Collection identifier, as text.';
COMMENT ON COLUMN collections.invoice_id IS 'The invoice collected (invoices.invoice_id).';
COMMENT ON COLUMN collections.collected_on IS 'Day the money was collected.';
COMMENT ON COLUMN collections.amount IS 'Collected amount, exact, in currency.';
COMMENT ON COLUMN collections.currency IS 'Currency code of amount.';
COMMENT ON COLUMN collections.updated_at IS 'When the platform last changed the collection.';
COMMENT ON COLUMN collections.raw IS 'The collection record exactly as received.';
COMMENT ON COLUMN collections._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN collections._deleted_at IS 'Set when a complete collections listing no longer contained the record; cleared when it comes back.';

CREATE TABLE payments (
    payment_id  text        PRIMARY KEY,
    project_id  text,
    brand_id    text,
    payee       text,
    paid_on     date,
    amount      numeric,
    currency    text,
    status      text,
    updated_at  timestamptz,
    raw         jsonb       NOT NULL,
    _synced_at  timestamptz NOT NULL DEFAULT now(),
    _deleted_at timestamptz
);
CREATE INDEX payments_project_id_idx ON payments (project_id);
CREATE INDEX payments_brand_id_idx ON payments (brand_id);

COMMENT ON TABLE  payments IS 'Money the agency paid out (GET /v1/finance/payments).';
COMMENT ON COLUMN payments.payment_id IS 'Payment identifier, as text.';
COMMENT ON COLUMN payments.project_id IS 'The project the payment is for (projects.project_id).';
COMMENT ON COLUMN payments.brand_id IS 'The brand the payment is for (brands.brand_id).';
COMMENT ON COLUMN payments.payee IS 'Who was paid, trimmed.';
COMMENT ON COLUMN payments.paid_on IS 'Day of the payment.';
COMMENT ON COLUMN payments.amount IS 'Paid amount, exact, in currency.';
COMMENT ON COLUMN payments.currency IS 'Currency code of amount.';
COMMENT ON COLUMN payments.status IS 'Payment status as the platform says it.';
COMMENT ON COLUMN payments.updated_at IS 'When the platform last changed the payment.';
COMMENT ON COLUMN payments.raw IS 'The payment record exactly as received.';
COMMENT ON COLUMN payments._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN payments._deleted_at IS 'Set when a complete payments listing no longer contained the record; cleared when it comes back.';

CREATE TABLE profitability (
    level       text        NOT NULL CHECK (level IN ('project', 'brand')),
    entity_id   text        NOT NULL,
    period      date        NOT NULL CHECK (extract(day FROM period) = 1),
    revenue     numeric,
    cost        numeric,
    margin      numeric,
    currency    text,
    raw         jsonb       NOT NULL,
    _synced_at  timestamptz NOT NULL DEFAULT now(),
    _deleted_at timestamptz,
    PRIMARY KEY (level, entity_id, period)
);
CREATE INDEX profitability_period_idx ON profitability (period);

COMMENT ON TABLE  profitability IS 'Revenue, cost and margin per project or brand and month (GET /v1/finance/profitability?level=…).';
COMMENT ON COLUMN profitability.level IS 'project or brand: what entity_id names.';
COMMENT ON COLUMN profitability.entity_id IS 'projects.project_id when level is project, brands.brand_id when level is brand.';
COMMENT ON COLUMN profitability.period IS 'The month, as its first day (the API''s YYYY-MM).';
COMMENT ON COLUMN profitability.revenue IS 'Revenue of the month, exact, in currency.';
COMMENT ON COLUMN profitability.cost IS 'Cost of the month, exact, in currency.';
COMMENT ON COLUMN profitability.margin IS 'Margin of the month as the platform computes it, exact.';
COMMENT ON COLUMN profitability.currency IS 'Currency code of the amounts.';
COMMENT ON COLUMN profitability.raw IS 'The profitability record exactly as received.';
COMMENT ON COLUMN profitability._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN profitability._deleted_at IS 'Set when a complete listing of the level no longer contained the row; cleared when it comes back.';

CREATE TABLE agency_finance_summary (
    period       date        PRIMARY KEY CHECK (extract(day FROM period) = 1),
    total_budget numeric,
    invoiced     numeric,
    collected    numeric,
    paid         numeric,
    profit       numeric,
    currency     text,
    raw          jsonb       NOT NULL,
    _synced_at   timestamptz NOT NULL DEFAULT now(),
    _deleted_at  timestamptz
);

COMMENT ON TABLE  agency_finance_summary IS 'Agency-wide aggregates per month (GET /v1/finance/summary).';
COMMENT ON COLUMN agency_finance_summary.period IS 'The month, as its first day (the API''s YYYY-MM).';
COMMENT ON COLUMN agency_finance_summary.total_budget IS 'Total budget of the month, exact, in currency.';
COMMENT ON COLUMN agency_finance_summary.invoiced IS 'Amount invoiced in the month, exact, in currency.';
COMMENT ON COLUMN agency_finance_summary.collected IS 'Amount collected in the month, exact, in currency.';
COMMENT ON COLUMN agency_finance_summary.paid IS 'Amount paid out in the month, exact, in currency.';
COMMENT ON COLUMN agency_finance_summary.profit IS 'Profit of the month, exact, in currency.';
COMMENT ON COLUMN agency_finance_summary.currency IS 'Currency code of the amounts.';
COMMENT ON COLUMN agency_finance_summary.raw IS 'The summary record exactly as received.';
COMMENT ON COLUMN agency_finance_summary._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';
COMMENT ON COLUMN agency_finance_summary._deleted_at IS 'Set when a complete summary listing no longer contained the month; cleared when it comes back.';

-- Communications -----------------------------------------------------------

CREATE TABLE emails (
    record_id       bigint      PRIMARY KEY,
    type_id         bigint,
    type_name       text,
    brand_id        text,
    project_id      text,
    subject         text        NOT NULL,
    message         text,
    has_attachments boolean     NOT NULL DEFAULT false,
    size_bytes      bigint      CHECK (size_bytes >= 0),
    mailbox_id      text,
    mailbox_thread  text,
    email_at        timestamptz NOT NULL,
    raw             jsonb       NOT NULL,
    _synced_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX emails_email_at_idx ON emails (email_at);
-- Partial: lookups are by a brand or project, and many e-mails carry none,
-- so loading does not maintain entries nobody looks up.
CREATE INDEX emails_brand_id_idx ON emails (brand_id) WHERE brand_id IS NOT NULL;
CREATE INDEX emails_project_id_idx ON emails (project_id) WHERE project_id IS NOT NULL;

COMMENT ON TABLE  emails IS 'E-mail communications (the communications endpoint), one row per record.';
COMMENT ON COLUMN emails.record_id IS 'Communication record identifier (the key of data.rows).';
COMMENT ON COLUMN emails.type_id IS 'Communication type identifier.';
COMMENT ON COLUMN emails.type_name IS 'Communication type name.';
COMMENT ON COLUMN emails.brand_id IS 'The brand the e-mail is filed under (brands.brand_id).';
COMMENT ON COLUMN emails.project_id IS 'The project the e-mail is filed under (projects.project_id).';
COMMENT ON COLUMN emails.subject IS 'Subject line (may be empty).';
COMMENT ON COLUMN emails.message IS 'Message body; NULL when bodies were not requested (with_message).';
COMMENT ON COLUMN emails.has_attachments IS 'Whether the e-mail has attachments (the API''s 1 or null).';
COMMENT ON COLUMN emails.size_bytes IS 'Size of the message in bytes.';
COMMENT ON COLUMN emails.mailbox_id IS 'Identifier of the message at the mailbox provider.';
COMMENT ON COLUMN emails.mailbox_thread IS 'Identifier of the conversation thread at the mailbox provider.';
COMMENT ON COLUMN emails.email_at IS 'When the e-mail was sent, with microseconds.';
COMMENT ON COLUMN emails.raw IS 'The communication record (email and users) exactly as received.';
COMMENT ON COLUMN emails._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';

CREATE TABLE users (
    user_key         text        PRIMARY KEY CHECK (user_key <> ''),
    platform_user_id bigint,
    first_name       text,
    last_name        text,
    full_name        text,
    email            text,
    phone            text,
    avatar_url       text,
    status           text,
    _synced_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX users_platform_user_id_idx ON users (platform_user_id);

COMMENT ON TABLE  users IS 'One row per person seen in communications, platform users and outsiders alike. Assembled from appearances: a value missing from one appearance never erases a known one.';
COMMENT ON COLUMN users.user_key IS 'The person''s key: the e-mail address trimmed and lower-cased, or id:<platform user id> when there is no address.';
COMMENT ON COLUMN users.platform_user_id IS 'Platform user id, learned from any appearance keyed by it; NULL for outsiders.';
COMMENT ON COLUMN users.first_name IS 'First name, trimmed.';
COMMENT ON COLUMN users.last_name IS 'Last name, trimmed; NULL for external senders.';
COMMENT ON COLUMN users.full_name IS 'Full name, trimmed (the API may add a trailing space).';
COMMENT ON COLUMN users.email IS 'E-mail address, trimmed and lower-cased; NULL when only the user id is known.';
COMMENT ON COLUMN users.phone IS 'Phone number; NULL when absent or empty.';
COMMENT ON COLUMN users.avatar_url IS 'Address of the avatar picture (a default blank avatar when there is none).';
COMMENT ON COLUMN users.status IS 'User status as the platform says it (e.g. Activ).';
COMMENT ON COLUMN users._synced_at IS 'When this row last changed in the warehouse; an unchanged re-sync leaves it alone.';

CREATE TABLE email_recipients (
    record_id  bigint      NOT NULL,
    role       text        NOT NULL CHECK (role IN ('from', 'to', 'cc', 'bcc')),
    user_key   text        NOT NULL,
    _synced_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (record_id, role, user_key)
);
CREATE INDEX email_recipients_user_key_idx ON email_recipients (user_key);

COMMENT ON TABLE  email_recipients IS 'Who sent (from) and received (to, cc, bcc) each e-mail; replaced exactly each time the e-mail is synced.';
COMMENT ON COLUMN email_recipients.record_id IS 'The e-mail (emails.record_id).';
COMMENT ON COLUMN email_recipients.role IS 'from, to, cc or bcc.';
COMMENT ON COLUMN email_recipients.user_key IS 'The person (users.user_key).';
COMMENT ON COLUMN email_recipients._synced_at IS 'When this row was written.';

-- Views --------------------------------------------------------------------

CREATE VIEW email_activity AS
SELECT e.record_id,
       e.email_at,
       e.subject,
       e.type_id,
       e.type_name,
       e.has_attachments,
       e.size_bytes,
       e.mailbox_thread,
       snd.user_key        AS sender_key,
       su.full_name        AS sender_name,
       su.platform_user_id AS sender_platform_user_id,
       coalesce(rc.to_count, 0)  AS to_count,
       coalesce(rc.cc_count, 0)  AS cc_count,
       coalesce(rc.bcc_count, 0) AS bcc_count,
       coalesce(rc.to_count + rc.cc_count + rc.bcc_count, 0) AS recipient_count,
       e.brand_id,
       b.name              AS brand_name,
       e.project_id,
       p.name              AS project_name
FROM emails e
LEFT JOIN LATERAL (
    SELECT r.user_key FROM email_recipients r
    WHERE r.record_id = e.record_id AND r.role = 'from'
    ORDER BY r.user_key LIMIT 1
) snd ON true
LEFT JOIN users su ON su.user_key = snd.user_key
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE r.role = 'to')  AS to_count,
           count(*) FILTER (WHERE r.role = 'cc')  AS cc_count,
           count(*) FILTER (WHERE r.role = 'bcc') AS bcc_count
    FROM email_recipients r
    WHERE r.record_id = e.record_id AND r.role <> 'from'
) rc ON true
LEFT JOIN brands b ON b.brand_id = e.brand_id
LEFT JOIN projects p ON p.project_id = e.project_id;

COMMENT ON VIEW email_activity IS 'E-mails with their sender, recipient counts per role, and brand and project names.';
COMMENT ON COLUMN email_activity.record_id IS 'The e-mail (emails.record_id).';
COMMENT ON COLUMN email_activity.email_at IS 'When the e-mail was sent.';
COMMENT ON COLUMN email_activity.subject IS 'Subject line.';
COMMENT ON COLUMN email_activity.type_id IS 'Communication type identifier.';
COMMENT ON COLUMN email_activity.type_name IS 'Communication type name.';
COMMENT ON COLUMN email_activity.has_attachments IS 'Whether the e-mail has attachments.';
COMMENT ON COLUMN email_activity.size_bytes IS 'Size of the message in bytes.';
COMMENT ON COLUMN email_activity.mailbox_thread IS 'Conversation thread at the mailbox provider.';
COMMENT ON COLUMN email_activity.sender_key IS 'The sender (users.user_key); the first one when the from list has several.';
COMMENT ON COLUMN email_activity.sender_name IS 'Full name of the sender.';
COMMENT ON COLUMN email_activity.sender_platform_user_id IS 'Platform user id of the sender; NULL for outsiders.';
COMMENT ON COLUMN email_activity.to_count IS 'Number of to recipients.';
COMMENT ON COLUMN email_activity.cc_count IS 'Number of cc recipients.';
COMMENT ON COLUMN email_activity.bcc_count IS 'Number of bcc recipients.';
COMMENT ON COLUMN email_activity.recipient_count IS 'Number of recipients in to, cc and bcc together.';
COMMENT ON COLUMN email_activity.brand_id IS 'The brand the e-mail is filed under.';
COMMENT ON COLUMN email_activity.brand_name IS 'Name of that brand; NULL when the brand is not synced.';
COMMENT ON COLUMN email_activity.project_id IS 'The project the e-mail is filed under.';
COMMENT ON COLUMN email_activity.project_name IS 'Name of that project; NULL when the project is not synced.';

CREATE VIEW brand_finance AS
SELECT b.brand_id,
       b.name,
       b.status,
       b.account_manager,
       b.currency,
       b.total_budget,
       b.invoiced,
       b.collected,
       b.invoiced - b.collected AS outstanding,
       s.snapshot_date          AS summary_date,
       pr.period                AS profitability_period,
       pr.revenue,
       pr.cost,
       pr.margin,
       pr.currency              AS profitability_currency
FROM brands b
LEFT JOIN LATERAL (
    SELECT max(fs.snapshot_date) AS snapshot_date
    FROM brand_financial_snapshots fs WHERE fs.brand_id = b.brand_id
) s ON true
LEFT JOIN LATERAL (
    SELECT p.period, p.revenue, p.cost, p.margin, p.currency
    FROM profitability p
    WHERE p.level = 'brand' AND p.entity_id = b.brand_id AND p._deleted_at IS NULL
    ORDER BY p.period DESC LIMIT 1
) pr ON true
WHERE b._deleted_at IS NULL;

COMMENT ON VIEW brand_finance IS 'Brands (not deleted) with their latest financial summary and their latest month of brand-level profitability.';
COMMENT ON COLUMN brand_finance.brand_id IS 'The brand (brands.brand_id).';
COMMENT ON COLUMN brand_finance.name IS 'Brand name.';
COMMENT ON COLUMN brand_finance.status IS 'Brand status.';
COMMENT ON COLUMN brand_finance.account_manager IS 'Account manager of the brand.';
COMMENT ON COLUMN brand_finance.currency IS 'Currency of total_budget, invoiced, collected and outstanding.';
COMMENT ON COLUMN brand_finance.total_budget IS 'Total budget, from the latest financial summary.';
COMMENT ON COLUMN brand_finance.invoiced IS 'Amount invoiced, from the latest financial summary.';
COMMENT ON COLUMN brand_finance.collected IS 'Amount collected, from the latest financial summary.';
COMMENT ON COLUMN brand_finance.outstanding IS 'invoiced minus collected.';
COMMENT ON COLUMN brand_finance.summary_date IS 'Day of the latest financial snapshot of the brand.';
COMMENT ON COLUMN brand_finance.profitability_period IS 'Latest month with brand-level profitability (first day of the month).';
COMMENT ON COLUMN brand_finance.revenue IS 'Revenue of that month.';
COMMENT ON COLUMN brand_finance.cost IS 'Cost of that month.';
COMMENT ON COLUMN brand_finance.margin IS 'Margin of that month.';
COMMENT ON COLUMN brand_finance.profitability_currency IS 'Currency of revenue, cost and margin.';

CREATE VIEW project_status AS
SELECT p.project_id,
       p.name,
       p.status,
       p.brand_id,
       b.name AS brand_name,
       p.start_date,
       p.deadline,
       p.closed_at,
       (p.closed_at IS NULL AND p.deadline < CURRENT_DATE) AS overdue,
       CASE WHEN p.closed_at IS NULL THEN p.deadline - CURRENT_DATE END AS days_to_deadline,
       coalesce(d.deliverables, 0)         AS deliverables,
       coalesce(d.open_deliverables, 0)    AS open_deliverables,
       coalesce(d.overdue_deliverables, 0) AS overdue_deliverables,
       d.next_due_date,
       coalesce(t.team_size, 0)            AS team_size,
       p.budget_amount,
       p.budget_currency,
       p.updated_at
FROM projects p
LEFT JOIN brands b ON b.brand_id = p.brand_id
LEFT JOIN LATERAL (
    SELECT count(*) AS deliverables,
           count(*) FILTER (WHERE pd.delivered_at IS NULL) AS open_deliverables,
           count(*) FILTER (WHERE pd.delivered_at IS NULL AND pd.due_date < CURRENT_DATE) AS overdue_deliverables,
           min(pd.due_date) FILTER (WHERE pd.delivered_at IS NULL) AS next_due_date
    FROM project_deliverables pd WHERE pd.project_id = p.project_id
) d ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS team_size FROM project_team_members tm WHERE tm.project_id = p.project_id
) t ON true
WHERE p._deleted_at IS NULL;

COMMENT ON VIEW project_status IS 'Projects (not deleted) with deadline, overdue flag, open deliverables and team size. Days are counted in the session''s time zone.';
COMMENT ON COLUMN project_status.project_id IS 'The project (projects.project_id).';
COMMENT ON COLUMN project_status.name IS 'Project name.';
COMMENT ON COLUMN project_status.status IS 'Project status.';
COMMENT ON COLUMN project_status.brand_id IS 'The project''s brand.';
COMMENT ON COLUMN project_status.brand_name IS 'Name of the brand; NULL when the brand is not synced.';
COMMENT ON COLUMN project_status.start_date IS 'Day the project starts.';
COMMENT ON COLUMN project_status.deadline IS 'Day the project is due.';
COMMENT ON COLUMN project_status.closed_at IS 'When the project was closed; NULL while open.';
COMMENT ON COLUMN project_status.overdue IS 'True when the project is open and its deadline has passed.';
COMMENT ON COLUMN project_status.days_to_deadline IS 'Days from today to the deadline (negative when overdue); NULL when closed or without deadline.';
COMMENT ON COLUMN project_status.deliverables IS 'Number of deliverables.';
COMMENT ON COLUMN project_status.open_deliverables IS 'Deliverables not delivered yet (delivered_at is NULL).';
COMMENT ON COLUMN project_status.overdue_deliverables IS 'Open deliverables whose due date has passed.';
COMMENT ON COLUMN project_status.next_due_date IS 'Earliest due date among open deliverables.';
COMMENT ON COLUMN project_status.team_size IS 'Number of team members.';
COMMENT ON COLUMN project_status.budget_amount IS 'Budget of the project.';
COMMENT ON COLUMN project_status.budget_currency IS 'Currency of the budget.';
COMMENT ON COLUMN project_status.updated_at IS 'When the platform last changed the project.';

CREATE VIEW sync_freshness AS
SELECT st.stream,
       count(*)                              AS partitions,
       max(st.last_success_at)               AS last_success_at,
       now() - max(st.last_success_at)       AS lag,
       max(st.watermark)                     AS watermark,
       sum(st.rows_total)::bigint            AS rows_total,
       sum(st.rejected_total)::bigint        AS rejected_total,
       lr.run_id                             AS last_run_id,
       lr.status                             AS last_run_status,
       lr.started_at                         AS last_run_started_at,
       q.day                                 AS quota_day,
       coalesce(q.requests, 0)               AS quota_requests
FROM sync_state st
LEFT JOIN LATERAL (
    SELECT r.run_id, r.status, r.started_at
    FROM sync_runs r WHERE st.stream = ANY (r.streams)
    ORDER BY r.started_at DESC LIMIT 1
) lr ON true
LEFT JOIN LATERAL (
    SELECT u.day, u.requests FROM api_quota_usage u ORDER BY u.day DESC LIMIT 1
) q ON true
GROUP BY st.stream, lr.run_id, lr.status, lr.started_at, q.day, q.requests;

COMMENT ON VIEW sync_freshness IS 'Per stream: last successful sync, lag since then, rows written, the latest run, and the requests spent on the latest quota day.';
COMMENT ON COLUMN sync_freshness.stream IS 'Stream name (sync_state.stream).';
COMMENT ON COLUMN sync_freshness.partitions IS 'Number of partitions of the stream in sync_state.';
COMMENT ON COLUMN sync_freshness.last_success_at IS 'When a partition of the stream last completed without error.';
COMMENT ON COLUMN sync_freshness.lag IS 'Time since last_success_at.';
COMMENT ON COLUMN sync_freshness.watermark IS 'Latest source instant fully synced.';
COMMENT ON COLUMN sync_freshness.rows_total IS 'Rows written by the stream over all runs.';
COMMENT ON COLUMN sync_freshness.rejected_total IS 'Records of the stream rejected over all runs.';
COMMENT ON COLUMN sync_freshness.last_run_id IS 'The latest run that synced the stream (sync_runs.run_id).';
COMMENT ON COLUMN sync_freshness.last_run_status IS 'Status of that run.';
COMMENT ON COLUMN sync_freshness.last_run_started_at IS 'When that run started.';
COMMENT ON COLUMN sync_freshness.quota_day IS 'The latest quota day with requests (api_quota_usage.day).';
COMMENT ON COLUMN sync_freshness.quota_requests IS 'Requests spent on that quota day, by every stream together.';

-- +goose Down
DROP VIEW sync_freshness;
DROP VIEW project_status;
DROP VIEW brand_finance;
DROP VIEW email_activity;
DROP TABLE email_recipients;
DROP TABLE users;
DROP TABLE emails;
DROP TABLE agency_finance_summary;
DROP TABLE profitability;
DROP TABLE payments;
DROP TABLE collections;
DROP TABLE invoices;
DROP TABLE budgets;
DROP TABLE project_history;
DROP TABLE project_deliverables;
DROP TABLE project_team_members;
DROP TABLE projects;
DROP TABLE brand_contacts;
DROP TABLE brand_financial_snapshots;
DROP TABLE brands;
