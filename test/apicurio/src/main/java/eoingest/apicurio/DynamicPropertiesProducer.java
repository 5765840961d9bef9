package eoingest.apicurio;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/* The list of dynamic (changeable at run time) properties, empty: the extension that builds it
 * (apicurio-common-app-components-config-index-deployment) is not on Maven Central. */
public class DynamicPropertiesProducer {
    @Produces
    @Singleton
    DynamicConfigPropertyList none() {
        return new DynamicConfigPropertyList(List.of());
    }
}
