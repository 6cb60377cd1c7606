-- 00004_reverse: reserved; filled by its issue before landing.
SELECT 1;
