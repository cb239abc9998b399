"""A collection in the field: the published campaign file and the ingest of the devices' reports.

:mod:`geoldp.field.campaign` writes and reads the campaign (the public configuration of one collection);
:mod:`geoldp.field.ingest` checks each device's record against it and stores it with its spend in one
transaction, and answers from the store. The device side is :mod:`geoldp.client` (numpy only).
"""
