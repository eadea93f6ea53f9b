-- Lore schema: finding the organization's members without reading every run.
--
-- A member's run notes its agent, role and department under `extra.org`, and a member's
-- lesson its owner. These partial indexes hold those rows only, so listing the members reads
-- the members' own records and nothing of the runs and lessons of handles without a role.
CREATE INDEX executions_member ON executions (json_extract(body, '$.extra.org.agent'), timestamp)
    WHERE json_extract(body, '$.extra.org.agent') IS NOT NULL;
CREATE INDEX lessons_owner ON lessons (json_extract(body, '$.extra.org.owner'), timestamp)
    WHERE json_extract(body, '$.extra.org.owner') IS NOT NULL;
