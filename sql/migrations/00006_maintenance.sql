-- 00006_maintenance: reserved; filled by its issue before landing.
SELECT 1;
