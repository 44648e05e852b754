-- 0004: what the channel providers need beyond 0001. Forward-only.

-- Email templates may carry an HTML alternative next to the plain-text `body`. The text part is
-- rendered as is; the HTML part is rendered with every variable HTML-escaped, so a recipient's
-- name cannot inject markup. Other channels have no HTML form and no subject.
ALTER TABLE templates ADD COLUMN html_body text;
ALTER TABLE templates ADD CONSTRAINT templates_html_body_email_only CHECK (html_body IS NULL OR channel = 'email');
ALTER TABLE templates ADD CONSTRAINT templates_subject_email_only CHECK (subject IS NULL OR channel = 'email');
ALTER TABLE templates ADD CONSTRAINT templates_name_nonempty CHECK (name <> '');

-- A suppression row applies to one category, or to every category with '*'. Empty strings
-- would silently match nothing, so they are refused.
ALTER TABLE suppressions ADD CONSTRAINT suppressions_category_nonempty CHECK (category <> '');
ALTER TABLE suppressions ADD CONSTRAINT suppressions_recipient_nonempty CHECK (recipient <> '');

-- No new index: the send-time lookups use the primary keys, templates (tenant_id, name, version)
-- for "newest version" (ORDER BY version DESC LIMIT 1 walks the PK backwards) and
-- suppressions (tenant_id, channel, recipient, category) for the opt-out check.
