-- A wildcard hostport (`*.example.com:443`) of one account may not cover another account's
-- hostports: the check looks for hostports ending in `.example.com:443`, a prefix of the reversed
-- value, which this index serves.
CREATE INDEX unique_keys_hostport_reversed ON unique_keys (reverse(value) text_pattern_ops) WHERE scope = 'hostport';
