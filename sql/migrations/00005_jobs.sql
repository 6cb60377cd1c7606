-- 00005_jobs: reserved; filled by its issue before landing.
SELECT 1;
