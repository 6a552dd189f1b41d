-- Category paths and provider bucket labels (DESIGN §5, issue 4; plugins/email/src/category.rs).
-- category stays the kind (promotions | newsletters | orders | receipts | social | personal);
-- category_path refines it: newsletters/<list>, deals-promotions/<merchant>, social/<network>,
-- updates/orders, updates/receipts, personal. labels is the JSON array of the provider's bucket
-- labels on the message (Gmail's CATEGORY_PROMOTIONS, ...); Maildir and Dovecot report none.
ALTER TABLE email_messages ADD COLUMN category_path TEXT NOT NULL DEFAULT '';
ALTER TABLE email_messages ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';

-- Rows synced before this migration get their kind's path root; the next full read of a message
-- (a new message, or a resync) gives the list or merchant segment.
UPDATE email_messages SET category_path = CASE category
    WHEN 'promotions' THEN 'deals-promotions'
    WHEN 'orders' THEN 'updates/orders'
    WHEN 'receipts' THEN 'updates/receipts'
    ELSE category END
WHERE category_path = '';

CREATE INDEX IF NOT EXISTS email_messages_category_path ON email_messages (category_path, date_unix);
