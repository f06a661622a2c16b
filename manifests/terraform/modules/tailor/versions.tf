terraform {
  # 1.11: validation blocks may refer to other variables (the IRSA inputs are required only
  # when identity is "irsa").
  required_version = ">= 1.11"

  # Lower bounds only, as a shared module should: an upper bound here would fail `terraform init`
  # in a root that has moved to the next major before this module has.
  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 6.0: data.aws_region's region attribute (5.x has only name, which 6.x deprecates), so
      # no one configuration serves both majors without a deprecation warning in every plan.
      version = ">= 6.0"
    }
    helm = {
      source = "hashicorp/helm"
      # 3.0: the major the example's provider configuration (kubernetes = {...}) is written
      # for. The release passes only name, chart, namespace and values, as 2.x took them too.
      version = ">= 3.0"
    }
  }
}
