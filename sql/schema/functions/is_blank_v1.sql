-- True when p_text is empty or holds only whitespace: exactly the characters
-- Python's str.isspace() accepts, so the emulator's check is the same.
create or replace function {{schema}}.is_blank_v1(p_text text) returns boolean
language sql immutable strict parallel safe
return p_text ~ '^[\t\n\x0b\f\r\x1c-\x1f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$';
