-- Reverts revision 0003.
drop function if exists {{schema}}.recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean);
drop function if exists {{schema}}.recency_v1(timestamptz, timestamptz, double precision);
drop function if exists {{schema}}.scoring_weights_v1(double precision, double precision, double precision);
\ir ../schema/functions/install_info_v1.sql
