variable "region" {
  description = "Region of the cluster."
  type        = string
  default     = "us-east-1"
}

variable "cluster_name" {
  description = "Name of an existing EKS cluster (authentication mode API or API_AND_CONFIG_MAP, for the nodes' access entry)."
  type        = string
  default     = "my-cluster"
}

variable "subnet_ids" {
  description = "Private subnets of the cluster's VPC the nodes may launch into."
  type        = list(string)
  default     = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
}

variable "image_repository" {
  description = "Where the scheduler image was pushed (make image, docker push)."
  type        = string
  default     = "123456789012.dkr.ecr.us-east-1.amazonaws.com/tailor-scheduler"
}

variable "image_tag" {
  description = "Tag of the pushed scheduler image (make image's VERSION). Default: the chart's version, which make image tags a release with."
  type        = string
  default     = ""
}

variable "create_spot_service_linked_role" {
  description = "Create the account's spot service-linked role for the spot pool. Leave false if the account has it already (any earlier spot use): creating it again fails with InvalidInput \"... has been taken in this account\"."
  type        = bool
  default     = false
}
