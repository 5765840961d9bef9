// Test-bed shim, compiled by test/connect.sh only when the Kafka Connect runtime lacks this class:
// Kafka 4.4 moved Sanitizer to org.apache.kafka.common.utils.internals, and Debezium 3.6's metrics
// (io.debezium.metrics.Metrics) still call it here. Each method forwards to the moved class.
package org.apache.kafka.common.utils;

public final class Sanitizer {
    private Sanitizer() {
    }

    public static String sanitize(String name) {
        return org.apache.kafka.common.utils.internals.Sanitizer.sanitize(name);
    }

    public static String desanitize(String name) {
        return org.apache.kafka.common.utils.internals.Sanitizer.desanitize(name);
    }

    public static String jmxSanitize(String name) {
        return org.apache.kafka.common.utils.internals.Sanitizer.jmxSanitize(name);
    }
}
