"""Kafka's own message schemas (clients/src/main/resources/common/message, kafka-clients 4.4.0, Apache-2.0) for the
requests kafka-python 3.0 does not define: ShareGroupDescribe (API 77) and DescribeShareGroupOffsets (API 90, v1
carries the broker-computed lag, KIP-1226). StreamsGroupDescribe (API 89, KIP-1071) is described for version 0 only,
generated from the ``Schema`` of ``StreamsGroupDescribe{Request,Response}Data`` in the kafka-clients 4.4.0 jar (its
header says so), and so is ConsumerGroupDescribe (API 69, KIP-848) for version 0 (``collectors.consumer_groups``;
checked field by field against ``ConsumerGroupDescribeResponseData.SCHEMAS[0]``). kafka-python builds a message class
from a schema file found here (collectors.group_kinds, collectors.consumer_groups)."""
